"""What one episode gives the runner: an `EpisodeRecord` (its row of results.jsonl) and a `Trajectory` (the
episode as strategies see it: strategies.Trajectory, re-exported here), returned together by every
benchmark's `run_episode` (harness/benchmarks/protocol.py). The runner hands the trajectory to online learners
and never stores it; the benchmark has already written its own trajectory file.

The record's field names are defined once, in harness/record_fields.py (plain strings that analysis imports too);
the keys and their order on disk are those results.jsonl has always had.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Optional

from harness.record_fields import (ERROR, ERROR_DETAIL, EPISODE_FIELDS, REWARD, SUCCESS, TASK_ID, TASK_TEXT,
                                    TERMINATION, WALL_S)
from strategies.base import Trajectory  # noqa: F401  (re-exported: the type run_episode returns beside the record)


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
        return {TASK_ID: self.task_id, SUCCESS: self.success, REWARD: self.reward, TERMINATION: self.termination,
                ERROR: self.error, ERROR_DETAIL: self.error_detail, **self.ledger, WALL_S: self.wall_s,
                TASK_TEXT: self.task_text, **self.extra}


# What the runner's EpisodeRunner gives the job loop for one (task, trial): the results.jsonl row (the record's
# fields plus the job's common ones) and the trajectory for an online learner, None when the episode produced
# none (a harness failure, or a Ray worker's episode: online learners never run on Ray).
Finished = tuple[dict[str, Any], Optional[Trajectory]]
