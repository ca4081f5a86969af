"""Learning after an episode, and re-running it for a learning strategy: ACE's reflect-and-retry rounds.

An online learner's `learn(trajectory, rerun, gold, samples)` (the Strategy protocol; StrategyBase's default learns
nothing) is called after each finished episode with two callables from the harness:
- `rerun()` runs the same task x trial again (the strategy decides what to deliver meanwhile) and returns
  the new episode, or None when it failed outside the agent (infra);
- `gold()` returns the benchmark adapter's gold solution of the task (asked only when ground truth is allowed;
  given only on the train split: a test task's solution never reaches a learner);
- `samples`: the job's episode count (ACE's Curator is told "sample i of N").
`learn` may return facts for the episode's row (ACE: `update_lost`), which the runner adds to it.
Strategies never import an adapter. Every re-run is a real, ledgered episode: its row goes to
`<run>/retries.jsonl` (same fields plus `reflection_rerun`: 1, 2, ...), never into results.jsonl, so each (task,
trial) keeps exactly one scored row and tables stay one row per episode; adaptation costs add the retries.
"""

from __future__ import annotations

import itertools
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Mapping, Optional, overload

from harness import ledger
from harness.benchmarks import Benchmark
from harness.benchmarks.protocol import Task
from harness.errors import INFRA, call_strategy
from harness.records import Outcome
from harness.row import Row, read_rows
from harness.runner.budget import episode_cost
from harness.serving.faults import ProviderUnusable
from harness.store import RunStore, redact
from strategies import Strategy, Trajectory

RETRIES = "retries.jsonl"
Learn = Callable[[Trajectory, Task, int], Mapping[str, Any]]  # an online learner's update: -> the row's facts


@overload
def shown(trajectory: Trajectory, ground_truth: bool) -> Trajectory: ...


@overload
def shown(trajectory: None, ground_truth: bool) -> None: ...


def shown(trajectory: Optional[Trajectory], ground_truth: bool) -> Optional[Trajectory]:
    """The episode as a strategy may see it (to learn from, or for its record_facts): without ground truth, no
    reward, verdict or evaluator report."""
    if ground_truth or trajectory is None:
        return trajectory
    return replace(trajectory, reward=None, success=None, feedback="")


def learner(strategy: Strategy, bench: Benchmark, run_attempt: Callable[[Task, int, int], Outcome], store: RunStore,
            samples: int | None = None, ground_truth: bool = False,
            charge: Callable[[float | None], None] | None = None) -> Learn:
    """-> learn(trajectory, task, trial) -> row facts: `strategy.learn` with rerun and gold; an exception raised
    by the strategy comes out as a StrategyError. Labels and the gold solution reach the strategy only with
    `ground_truth` (the config check allows that on train only). `charge` (budget_usd) is told what each re-run
    and each update's own model calls cost, as they are spent."""
    gold_allowed = ground_truth and bench.settings.split == "train"

    def run(trajectory: Trajectory, task: Task, trial: int) -> Mapping[str, Any]:
        attempts = itertools.count(1)

        def rerun() -> Any:
            outcome = run_attempt(task, trial, next(attempts))
            if outcome.stop is not None:  # bad key / unknown model: the job stops, as for any episode
                raise ProviderUnusable(outcome.stop.detail)
            assert outcome.row is not None
            append_retry(store, outcome.row)
            if charge is not None:
                charge(episode_cost(outcome.row))
            if outcome.trajectory is None or outcome.row.get("error") == INFRA:
                return None
            return shown(outcome.trajectory, ground_truth)

        gold = (lambda: bench.gold_solution(task)) if gold_allowed else None
        with ledger.learning() as spent:  # the update's own model calls (ACE's Reflector, Curator) join the row
            try:
                facts = call_strategy(strategy, "learn", shown(trajectory, ground_truth), rerun, gold, samples)
            finally:
                if charge is not None and spent.strategy_calls:  # spent even when the update then failed
                    charge(spent.strategy_fields()["strategy_cost_usd"])
        return {**(facts if isinstance(facts, Mapping) else {}), **spent.strategy_fields()}

    return run


def append_retry(store: RunStore, row: Row) -> None:
    line = row.to_json(scrub=redact) + "\n"
    with store.locked():
        with (Path(store.root) / RETRIES).open("a", encoding="utf-8") as fh:
            fh.write(line)


def read_retries(run_dir: str | Path) -> list[Row]:
    """The re-runs' rows, through the one reader of row files (harness/row.py)."""
    return [row for _, row in read_rows(Path(run_dir) / RETRIES)]
