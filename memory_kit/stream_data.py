"""An online learner's stream as JSON-able data (`Strategy.state`: snapshot / restore): the guidelines it
learned, written and read back whole, so a resumed run and a Ray worker see exactly the stream the driver had."""

from __future__ import annotations

import threading
from dataclasses import asdict
from typing import Any, Iterable, Mapping, Optional, Self

from strategies.base import StreamState, trial_of
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


class TrialStreams:
    """The trial streams of an online learner that keeps one stream per trial (`declaration.trial_streams`), each
    its own object of the learner's class from the same start, the job's strategy being stream 0. A learner lists
    it before StrategyBase and provides its fields `stream_trial`, `_lock`, `_streams`, and `new_stream()` (a
    stream at its start), `state_data()` and `set_state_data(data)` (a stream as data, under the stream's lock):
    `state`, `snapshot`, `restore` and `for_trial` are then the kit's, the same for every such learner."""

    stream_trial: int
    _lock: threading.Lock
    _streams: dict[int, Self]

    @property
    def state(self) -> Optional[StreamState]:
        return self  # its streams as data: snapshot / restore

    def snapshot(self, trial: int) -> dict[str, Any]:
        stream = self.for_trial(trial)
        with stream._lock:
            return stream.state_data()

    def restore(self, trial: int, state: Mapping[str, Any]) -> None:
        stream = self.for_trial(trial)
        with stream._lock:
            stream.set_state_data(state)

    def for_trial(self, trial: int) -> Self:
        if trial == 0:
            return self
        with self._lock:  # each trial its own stream from the same start
            if trial not in self._streams:
                stream = self.new_stream()
                stream.stream_trial = trial
                self._streams[trial] = stream
            return self._streams[trial]

    def new_stream(self) -> Self:
        raise NotImplementedError

    def state_data(self) -> dict[str, Any]:
        raise NotImplementedError

    def set_state_data(self, state: Mapping[str, Any]) -> None:
        raise NotImplementedError
