"""What one episode gives the runner: an `EpisodeRecord` (its row of results.jsonl) and a `Trajectory` (the
episode as strategies see it: strategies.base.Trajectory), returned together by every
benchmark's `run_episode` (harness/benchmarks/protocol.py). The runner hands the trajectory to online learners
and never stores it; the benchmark has already written its own trajectory file.

The row the runner makes of a record (the job's fields around it, the strategy's facts after it) is
harness/row.py's `Row`, which owns every field name and their order on disk. An episode reaches the job loop as
one `Outcome`, whatever ran it (a thread, a Ray worker, the budget gate).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Literal, Mapping, Optional

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
class Outcome:
    """What became of one (task, trial), through every executor: its row (a failure is a row too, labelled by
    harness.errors), or a stop and nothing recorded.

    trajectory: for an online learner (never stored; None when the episode produced none, or ran on Ray);
    payload: a Ray worker's trajectory file, which the driver writes; stop: why the episode did not run (the
    budget held it back, or the provider is unusable); unreachable: the endpoint an infra episode could not
    connect to after its retries (harness/runner/reach.py decides whether the job stops)."""

    row: Optional[Row] = None
    trajectory: Optional[Trajectory] = None
    payload: Optional[bytes] = field(default=None, repr=False)
    stop: Optional[Stop] = None
    unreachable: Optional[str] = None


# How an episode runs: (task, trial[, rerun]) -> its Outcome (harness/runner/episode.py's EpisodeRunner, a Ray
# worker's RayEpisodes); every executor takes one
Episodes = Callable[..., Outcome]
