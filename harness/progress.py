"""A job's progress: a tqdm bar on a terminal, a plain line every `every` seconds otherwise.

A log file gets readable lines instead of one line of thousands of `\\r` updates. Either way the agent steps
taken so far are shown, so a job of a few long episodes (the offline default: one task) is seen to move before
its first episode ends. Steps are counted in this process (harness.ledger.steps_taken): with executor=ray the
workers' steps are not seen, only finished episodes.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import TextIO

from tqdm import tqdm

from harness.ledger import steps_taken


class Progress:
    def __init__(self, key: str, total: int, done: int, enabled: bool = True, stream: TextIO | None = None,
                 every: float = 30.0, tick: float = 1.0):
        self.key, self.total, self.done = key, total, done
        self.stream = stream or sys.stderr
        self.enabled, self.every, self.tick = enabled, every, tick
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self._steps0, self._began = steps_taken(), time.monotonic()
        self._stop = threading.Event()
        self._bar = tqdm(total=total, initial=done, desc=key, file=self.stream, dynamic_ncols=True) \
            if enabled and self.tty else None
        self._thread = threading.Thread(target=self._watch, daemon=True, name="memdeliv-progress")
        if enabled:
            self._thread.start()

    @property
    def steps(self) -> int:
        return steps_taken() - self._steps0

    def line(self) -> str:
        elapsed = int(time.monotonic() - self._began)
        return (f"memdeliv: {self.key}: {self.done}/{self.total} episodes, {self.steps} agent steps, "
                f"{elapsed // 60}m{elapsed % 60:02d}s")

    def update(self, n: int = 1) -> None:
        self.done += n
        if self._bar is not None:
            self._bar.set_postfix_str(f"{self.steps} steps", refresh=False)
            self._bar.update(n)

    def _watch(self) -> None:
        last = time.monotonic()
        while not self._stop.wait(self.tick if self.tty else min(self.tick, self.every)):
            if self._bar is not None:
                self._bar.set_postfix_str(f"{self.steps} steps")
            elif time.monotonic() - last >= self.every:
                last = time.monotonic()
                print(self.line(), file=self.stream, flush=True)

    def close(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=2)
        if self._bar is not None:
            self._bar.close()
        elif self.enabled:
            print(self.line(), file=self.stream, flush=True)
