"""An online learner's streams belong to the run: one mechanism for every learner that keeps its stream as data
(`Strategy.state`, snapshot / restore: ace_online, reasoning_bank, dynamic_cheatsheet, awm_online, a plugin).

After each update (applied or lost) the stream's state and the episode keys it has applied are written with the
run (RunStore.write_stream_state), with the state before it, ahead of the episode's row. A resumed run restores every
stream to its last committed state whose episode has its row (a kill between an update's commit and its row rolls
that one update back, so the re-run episode sees what it saw the first time and learns once), and replays
(harness/runner/online_replay.py) a recorded episode whose key is not applied. The same
state travels with an episode to a Ray worker and back (harness/runner/ray_executor.py).
"""

from __future__ import annotations

import threading
from typing import Any, Iterable, Optional

from harness.store import RunStore
from strategies import Strategy


class StreamStates:
    def __init__(self, strategy: Strategy, store: RunStore, job_slug: str):
        self.state, self.store, self.slug = strategy.state, store, job_slug
        self.kept = self.state is not None
        self.docs: dict[int, dict[str, Any]] = store.read_stream_states(job_slug) if self.kept else {}
        self._lock = threading.Lock()

    def restore(self, recorded: Iterable[str]) -> int:
        """Every stream to its last committed state whose episode (key) is `recorded`; -> streams restored."""
        recorded = set(recorded)
        for trial, doc in sorted(self.docs.items()):
            if doc["applied"] and doc["applied"][-1] not in recorded:  # updated, then killed before its row
                doc = self.docs[trial] = {"applied": doc["applied"][:-1], "state": doc["previous"], "previous": None}
            if doc["state"] is not None and self.state is not None:  # None: the stream as it starts
                self.state.restore(trial, doc["state"])
        return len(self.docs)

    def applied(self) -> Optional[frozenset[str]]:
        """The episode keys whose update is committed (None: the learner keeps no state here)."""
        if not self.kept:
            return None
        with self._lock:
            return frozenset(key for doc in self.docs.values() for key in doc["applied"])

    def commit(self, trial: int, key: str) -> None:
        """Stream `trial` as it stands after the update of episode `key`."""
        if self.state is None:
            return
        state = self.state.snapshot(trial)
        with self._lock:
            last = self.docs.get(trial, {"applied": [], "state": None})
            doc = {"applied": [*last["applied"], key], "state": state, "previous": last["state"]}
            self.docs[trial] = doc
        self.store.write_stream_state(self.slug, trial, doc)
