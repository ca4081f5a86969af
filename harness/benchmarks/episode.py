"""The frame every `run_episode` shares, written once: a clock and a token ledger from the start, failures
labelled by harness.errors, the trajectory file written redacted and atomically, and the record built from
the shared fields (harness/records.py). A benchmark keeps only what is its own: running and scoring the task.

    frame = EpisodeFrame()
    try:
        ...  # run the agent with frame.ledger
    except Exception as exc:
        frame.fail(exc)          # (error, error_detail) as every benchmark labels them
    frame.write(trajectory_path, text)
    return frame.finish(task.id, success=..., reward=..., termination=..., task_text=..., trajectory=...)
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Optional

from harness.errors import classify
from harness.ledger import Ledger, current
from harness.records import EpisodeRecord
from strategies import Trajectory
from harness.secrets import redact_text
from foundation.atomic import write_text_atomic


class EpisodeFrame:
    """One episode's clock, ledger and error label (None until something fails). The ledger is the one the
    runner opened for this episode (harness.ledger.episode), so the frame's calls and the judge's land together;
    a fresh one when the benchmark is called outside a runner."""

    def __init__(self, ledger: Optional[Ledger] = None):
        self.started = time.perf_counter()
        self.ledger = ledger if ledger is not None else current() or Ledger()
        self.error: Optional[str] = None
        self.detail: Optional[str] = None

    @property
    def elapsed_s(self) -> float:
        return time.perf_counter() - self.started

    def fail(self, exc: BaseException) -> None:
        """Label the exception that ended the episode (context_overflow, strategy, infra, harness, ...)."""
        self.error, self.detail = classify(exc)

    def label(self, error: Optional[str], detail: Optional[str] = None) -> None:
        """A label the benchmark decides itself (a malformed reply, an engine failure, tau2's own reason)."""
        self.error, self.detail = error, detail

    @staticmethod
    def write(path: Path, text: str) -> None:
        """The trajectory file: secrets redacted, written atomically (a kill mid-write leaves no half file)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(path, redact_text(text))

    def finish(self, task_id: str, *, success: bool, reward: float, termination: str, task_text: str,
               trajectory: Trajectory, **extra: object) -> tuple[EpisodeRecord, Trajectory]:
        """The episode's record (shared fields, then the benchmark's own `extra`) and its trajectory."""
        record = EpisodeRecord(task_id=task_id, success=success, reward=reward, termination=termination,
                               error=self.error, error_detail=self.detail, ledger=self.ledger.record_fields(),
                               wall_s=round(self.elapsed_s, 4), task_text=task_text, extra=extra)
        return record, trajectory
