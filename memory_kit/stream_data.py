"""An online learner's stream as JSON-able data (`Strategy.state`: snapshot / restore): the guidelines it
learned, written and read back whole, so a resumed run and a Ray worker see exactly the stream the driver had."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any, Iterable

from strategies.base import trial_of
from strategies import Guideline, Trajectory


def other_stream(stream_trial: int, trajectory: Trajectory) -> int:
    """The trial whose stream an update belongs to when the learner called (the job's strategy, stream 0) is not
    that stream, else 0: the harness calls the job's strategy's `learn` for every trial's episode."""
    trial = trial_of(trajectory.episode)
    return trial if stream_trial == 0 else 0


def guideline_data(items: Iterable[Guideline]) -> list[dict[str, Any]]:
    return [asdict(g) for g in items]


def guidelines_of(data: Iterable[dict[str, Any]]) -> list[Guideline]:
    return [Guideline(**{**d, "source_task_ids": tuple(d.get("source_task_ids") or ())}) for d in data]
