"""`budget_usd`: a hard cap on what a run directory spends, from recorded costs (docs/cost.md).

Spent = every record already in the run's results.jsonl and retries.jsonl (all jobs, all attempts: superseded ones
and an online learner's re-runs were paid for too; agent + user simulator + judge + the strategy's own calls, an
online learner's updates: every role of a row's `usage`) plus what this job spends: its episodes, their re-runs and
updates (`charge`). An episode starts only when spent + (episodes in flight + 1) x the mean cost of an episode so
far stays within the budget; so the total can pass the budget by at most the episodes already in flight when the
estimate was low. Episodes in flight always finish and are recorded. An episode not started comes back as an
`Outcome` stopped by the budget: nothing ran, nothing is recorded. The spend before this job comes from the rows
the job read once at its start (harness/runner/loop.py).
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Iterable, Optional

import harness.usage as by_role
from harness.benchmarks.protocol import Task
from harness.records import Outcome, Stop
from harness.row import Row, RowLike


def episode_cost(record: RowLike) -> Optional[float]:
    """USD of one record (a Row, or a line as decoded) over every role of its usage (harness/usage.py `cost`);
    None when a role with calls is unpriced."""
    return by_role.cost(by_role.of_record(record))


def recorded_spend(rows: Iterable[Row]) -> tuple[float, list[float]]:
    """(USD over every row, the costs of its priced episodes)."""
    spent, costs = 0.0, []
    for row in rows:
        cost = episode_cost(row)
        if cost is not None:
            spent += cost
            costs.append(cost)
    return spent, costs


class Budget:
    def __init__(self, limit: float, rows: Iterable[Row]):
        self.limit = float(limit)
        self.spent, costs = recorded_spend(rows)
        self._costs_sum, self._costs_n = sum(costs), len(costs)
        self.in_flight = 0
        self.stopped = False  # set once an episode was held back
        self.unpriced = 0  # finished episodes whose cost could not be known
        self._lock = threading.Lock()

    def mean_cost(self) -> float:
        return self._costs_sum / self._costs_n if self._costs_n else 0.0

    def admit(self) -> bool:
        with self._lock:
            if self.stopped or self.unpriced:
                self.stopped = True
                return False
            if self.spent + (self.in_flight + 1) * self.mean_cost() > self.limit or self.spent >= self.limit:
                self.stopped = True
                return False
            self.in_flight += 1
            return True

    def charge(self, cost: Optional[float]) -> None:
        """What this job spends besides its gated episodes (a re-run, an online update's own calls); None: a
        spend whose price is unknown, so no further episode starts."""
        with self._lock:
            if cost is None:
                self.unpriced += 1
            else:
                self.spent += cost

    def finish(self, record: Optional[Row]) -> None:
        with self._lock:
            self.in_flight -= 1
            cost = episode_cost(record) if record is not None else 0.0
            if cost is None:
                self.unpriced += 1  # cannot count it: no further episode starts (the cap must hold)
                return
            self.spent += cost
            self._costs_sum += cost
            self._costs_n += 1

    def gate(self, episodes: Callable[[Any, int], Outcome]) -> Callable[[Any, int], Outcome]:
        """`episodes` behind the budget: an Outcome stopped by it (nothing run) when the next episode could cross
        it."""
        def run(task: Task, trial: int) -> Outcome:
            if not self.admit():
                return Outcome(stop=Stop("budget", f"held back: ${self.spent:.4f} of ${self.limit:.2f} spent"))
            finished = None
            try:
                finished = episodes(task, trial)
                return finished
            finally:
                self.finish(finished.row if finished is not None else None)
        return run

    def facts(self, done: int, total: int) -> dict[str, Any]:
        return {"budget_usd": self.limit, "spent_usd": round(self.spent, 6), "stopped": self.stopped,
                "episodes_done": done, "episodes_total": total}

    def line(self, done: int, total: int) -> str:
        return f"stopped at budget: ${self.spent:.4f} of ${self.limit:.2f}, {done} of {total} episodes"
