"""What one episode gives the runner: an `EpisodeRecord` (its row of results.jsonl) and a `Trajectory` (the
episode as strategies see it: strategies.base.Trajectory), returned together by every
benchmark's `run_episode` (harness/benchmarks/protocol.py). The runner hands the trajectory to online learners
and never stores it; the benchmark has already written its own trajectory file.

The row of an episode is made by one function, `build_row`, from its `RowParts`: the job's fields, the episode's
record (or the failure that left none), the strategy's facts and, for an online learner, its update (`learned`).
A row is never edited after it is built: a learner's update is one of its parts, so that row is built once the
update is known (harness/runner/loop.py), from the same parts; the store adds only its own `attempt`
(harness/store). harness/row.py's `Row` owns every field name and their order on disk. An episode reaches the job
loop as one `Outcome`, whatever ran it (a thread, a Ray worker, the budget gate).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable, Literal, Mapping, Optional, Union

from harness.row import Row
from strategies import Trajectory


@dataclass(frozen=True)
class EpisodeRecord:
    """One episode's outcome, as its benchmark reports it (before the runner adds the job's common fields).

    termination: how it ended ("completed", tau2's reason, or the error label); error / error_detail: the label
    from harness.errors (None when the episode ran to its end); ledger: `Ledger.record_fields()`; task_text:
    what the agent was asked; extra: the benchmark's own columns (τ²: task_set, agent, judge_model; AppWorld:
    pass_count, num_tests, difficulty, scenario_id, scenario_tasks)."""

    task_id: str
    success: bool
    reward: float
    termination: str
    error: Optional[str]
    error_detail: Optional[str]
    ledger: Mapping[str, Any]
    wall_s: float
    task_text: str
    extra: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        clash = set(self.extra) & {*EPISODE_FIELDS, *self.ledger}
        if clash:  # a benchmark column must not silently replace a shared one
            raise ValueError(f"EpisodeRecord.extra repeats shared field(s) {sorted(clash)}")

    def fields(self) -> dict[str, Any]:
        """The record's keys, in results.jsonl order."""
        return {"task_id": self.task_id, "success": self.success, "reward": self.reward,
                "termination": self.termination, "error": self.error, "error_detail": self.error_detail,
                **self.ledger, "wall_s": self.wall_s, "task_text": self.task_text, **self.extra}


EPISODE_FIELDS = ("task_id", "success", "reward", "termination", "error", "error_detail", "wall_s", "task_text")


# Why an episode did not run, or a job ended before its last episode: budget_usd reached; the provider refused
# the job (bad key, unknown model: nothing recorded for it); its first episodes could not reach the provider
# (harness/runner/reach.py: recorded, as infra); Ctrl-C. Every rerun of the job resumes where it stopped.
StopReason = Literal["budget", "provider_unusable", "provider_unreachable", "interrupted"]


@dataclass(frozen=True)
class Stop:
    """The one form of a stop: the episode's Outcome carries it, and the job's summary and manifest say it."""

    reason: StopReason
    detail: str

    def facts(self) -> dict[str, str]:
        return {"reason": self.reason, "detail": self.detail}


@dataclass(frozen=True)
class RowParts:
    """What a row is made of. job: the job's fields (harness/runner/job.py `Job.row_fields`); record: what the
    benchmark returned (an `EpisodeRecord`, or its fields: an imported episode's; `failure()` when the episode
    left none); facts: the strategy's record_facts; learned: an online learner's update (its facts and its
    `learning` usage)."""

    job: Mapping[str, Any]
    trial: int
    record: Union[EpisodeRecord, Mapping[str, Any]]
    seed: Optional[int] = None
    order: Optional[int] = None  # the trial's task order, when the job runs several (benchmark.orders)
    started_at: Optional[str] = None
    trajectory: Optional[str] = None
    facts: Mapping[str, Any] = field(default_factory=dict)
    rerun: int = 0
    learned: Mapping[str, Any] = field(default_factory=dict)

    def with_update(self, learned: Mapping[str, Any]) -> "RowParts":
        return replace(self, learned=learned)


def failure(task_id: str, error: str, detail: str) -> dict[str, Any]:
    """The record of an episode whose machinery failed: no result, no trajectory, no step."""
    return {"task_id": task_id, "success": False, "reward": 0.0, "usage": {"agent": {"calls": 0}}, "error": error,
            "error_detail": detail}


def build_row(parts: RowParts) -> Row:
    """THE row of an episode, from its parts (each column goes to its owner: the benchmark's, the strategy's, the
    learner's extra columns for what harness/row.py does not declare)."""
    record = parts.record.fields() if isinstance(parts.record, EpisodeRecord) else dict(parts.record)
    episode = {"trial": parts.trial, **({"order": parts.order} if parts.order is not None else {}),
               **({"seed": parts.seed} if parts.seed is not None else {}), **record}
    learned = dict(parts.learned)
    if "usage" in learned:  # the update's own calls: a role of the episode's usage
        learned["usage"] = {**episode.get("usage", {}), **learned["usage"]}
    where = {"trajectory": parts.trajectory, **({"started_at": parts.started_at} if parts.started_at else {})}
    return Row.of((parts.job, "benchmark_extra"), (episode, "benchmark_extra"), (parts.facts, "strategy_extra"),
                  ({"reflection_rerun": parts.rerun} if parts.rerun else {}, "strategy_extra"),
                  (where, "learner_extra"), (learned, "learner_extra"))


@dataclass(frozen=True)
class Outcome:
    """What became of one (task, trial), through every executor: its row (a failure is a row too, labelled by
    harness.errors), or a stop and nothing recorded.

    trajectory: for an online learner (never stored; None when the episode produced none, or ran on Ray);
    payload: a Ray worker's trajectory file, which the driver writes; stop: why the episode did not run (the
    budget held it back, or the provider is unusable); unreachable: the endpoint an infra episode could not
    connect to after its retries (harness/runner/reach.py decides whether the job stops)."""

    row: Optional[Row] = None
    parts: Optional[RowParts] = None  # what `row` was built from (a learner's row: built again with its update)
    trajectory: Optional[Trajectory] = None
    payload: Optional[bytes] = field(default=None, repr=False)
    stop: Optional[Stop] = None
    unreachable: Optional[str] = None
    stream_state: Optional[dict[str, Any]] = None  # a Ray worker's stream after the episode (its deliver may learn)


# How an episode runs: (task, trial[, rerun]) -> its Outcome (harness/runner/episode.py's EpisodeRunner, a Ray
# worker's RayEpisodes); every executor takes one
Episodes = Callable[..., Outcome]
