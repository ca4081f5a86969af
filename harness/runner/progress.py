"""A job's progress: a tqdm bar on a terminal, a plain line every `every` seconds otherwise.

Both show episodes done / total, the running success rate, errors by label, the USD spent so far (the job's
recorded costs, every role: agent, user simulator, judge, the strategy's own calls) and the projected total
(spent + episodes left x the mean cost of an episode). What is not known is never shown as $0, and reads as the
tables read it: `USD n/a (unpriced)` when a model of the job has no price, `USD n/a` while no episode has a
priced call (e.g. every episode so far failed before its first call).

A log file gets readable lines instead of one line of thousands of `\\r` updates. Either way the agent steps
taken so far are shown, so a job of a few long episodes (the offline default: one task) is seen to move before
its first episode ends. Steps are counted by this job's episode ledgers in this process (`step`, the ledgers'
`on_step`): with executor=ray the workers' steps are not seen, only finished episodes.
"""

from __future__ import annotations

import sys
import threading
import time
from collections import Counter
from typing import Iterable, Optional, TextIO

from tqdm import tqdm

import harness.usage as by_role
from harness.row import Row
from foundation.terminal import wrap
from harness.runner.budget import episode_cost



class Progress:
    def __init__(self, key: str, total: int, done: int, enabled: bool = True, stream: TextIO | None = None,
                 every: float = 30.0, tick: float = 1.0, recorded: Iterable[Row] = ()):
        self.key, self.total, self.done = key, total, done
        # `recorded`: the job's records from before (a resume), so rates and spend cover the whole job
        self.successes, self.seen = 0, 0
        self.errors: Counter[str] = Counter()
        self.spent, self.priced, self.unpriced = 0.0, 0, 0  # priced: episodes with a priced call
        self._lock = threading.Lock()
        for record in recorded:
            self._count(record)
        self.stream = stream or sys.stderr
        self.enabled, self.every, self.tick = enabled, every, tick
        self.tty = bool(self.stream.isatty())
        self._steps, self._began = 0, time.monotonic()
        self._stop = threading.Event()
        self._bar = tqdm(total=total, initial=done, desc=key, file=self.stream, dynamic_ncols=True) \
            if enabled and self.tty else None
        self._thread = threading.Thread(target=self._watch, daemon=True, name="memdeliv-progress")
        if enabled:
            self._thread.start()

    @property
    def steps(self) -> int:
        return self._steps

    def step(self) -> None:
        """One more agent step of this job (each episode's ledger calls it, harness.ledger.episode)."""
        with self._lock:
            self._steps += 1

    def _count(self, record: Row) -> None:
        with self._lock:
            self.seen += 1
            self.successes += bool(record.get("success"))
            if record.get("error"):
                self.errors[str(record["error"])] += 1
            cost = episode_cost(record)  # every role, the strategy's own calls among them (budget.py's sum)
            if cost is None:
                self.unpriced += 1
            elif by_role.priced(by_role.of_record(record)):
                self.spent += cost
                self.priced += 1

    def stats(self) -> str:
        """'success 62.5%, errors: agent 1, infra 1, $0.0420 spent, ~$0.1680 projected' (USD: every role)."""
        with self._lock:
            parts = [f"success {100 * self.successes / self.seen:.1f}%" if self.seen else "success -"]
            if self.errors:
                parts.append("errors: " + ", ".join(f"{k} {v}" for k, v in sorted(self.errors.items())))
            if self.unpriced:
                parts.append("USD n/a (unpriced)")
            elif self.priced:
                projected = self.spent + max(0, self.total - self.done) * self.spent / self.priced
                parts.append(f"${self.spent:.4f} spent, ~${projected:.4f} projected")
            elif self.seen:
                parts.append("USD n/a")
        return ", ".join(parts)

    def line(self) -> str:
        elapsed = int(time.monotonic() - self._began)
        return wrap(f"memdeliv: {self.key}: {self.done}/{self.total} episodes, {self.steps} agent steps, "
                    f"{self.stats()}, {elapsed // 60}m{elapsed % 60:02d}s")

    def update(self, n: int = 1, record: Optional[Row] = None) -> None:
        self.done += n
        if record is not None:
            self._count(record)
        if self._bar is not None:
            self._bar.set_postfix_str(f"{self.stats()}, {self.steps} steps", refresh=False)
            self._bar.update(n)

    def _watch(self) -> None:
        last = time.monotonic()
        while not self._stop.wait(self.tick if self.tty else min(self.tick, self.every)):
            if self._bar is not None:
                self._bar.set_postfix_str(f"{self.stats()}, {self.steps} steps")
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
