"""Re-running an episode for a learning strategy: ACE's reflect-and-retry rounds.

A strategy with a `learn(trajectory, rerun=, gold=)` method (ace_online) gets, after each finished
episode, two callables from the harness instead of a plain `update(trajectory)`:
- `rerun()` runs the same task x trial again (the strategy decides what to deliver meanwhile) and returns
  the new episode, or None when it failed outside the agent (infra);
- `gold()` returns the benchmark adapter's gold solution of the task (asked only when ground truth is allowed;
  given only on the train split: a test task's solution never reaches a learner);
- `samples`: the job's episode count (ACE's Curator is told "sample i of N").
`learn` may return facts for the episode's record (ACE: `update_lost`), which the runner adds to it.
Strategies never import an adapter. Every re-run is a real, ledgered episode: its record goes to
`<run>/retries.jsonl` (same fields plus `reflection_rerun`: 1, 2, ...), never into results.jsonl, so each (task, trial) keeps
exactly one scored record and tables stay one row per episode; adaptation costs add the retries.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable

from harness.errors import call_strategy
from harness.store import RunStore, redact

RETRIES = "retries.jsonl"


def shown(trajectory: Any, ground_truth: bool) -> Any:
    """The episode as a learner may see it: without ground truth, no reward, verdict or evaluator report."""
    return trajectory if ground_truth else replace(trajectory, reward=None, success=None, feedback="")


def learner(strategy: Any, bench: Any, run_attempt: Callable[[Any, int, int], tuple[dict[str, Any], Any]],
            store: RunStore, samples: int | None = None,
            ground_truth: bool = False) -> Callable[[Any, Any, int], dict[str, Any]]:
    """-> learn(trajectory, task, trial) -> record facts: `strategy.learn` with rerun/gold when it has one,
    else `update`; an exception raised by the strategy comes out as a StrategyError. Labels and the gold
    solution reach the strategy only with `ground_truth` (the config check allows that on train only)."""
    if getattr(strategy, "learn", None) is None:
        return lambda trajectory, task, trial: call_strategy(strategy, "update", shown(trajectory, ground_truth)) and {}
    gold_allowed = ground_truth and str(bench.cfg.split) == "train"

    def run(trajectory: Any, task: Any, trial: int) -> dict[str, Any]:
        attempts = itertools.count(1)

        def rerun() -> Any:
            record, again = run_attempt(task, trial, next(attempts))
            append_retry(store, record)
            return None if again is None or record.get("error") == "infra" else shown(again, ground_truth)

        gold = (lambda: bench.gold_solution(task)) if gold_allowed else None
        facts = call_strategy(strategy, "learn", shown(trajectory, ground_truth), rerun, gold, samples)
        return facts if isinstance(facts, dict) else {}

    return run


def record_facts(strategy: Any, trajectory: Any) -> dict[str, Any]:
    """A strategy's own fields for an episode's record (ACE: `cited_steps`, `memory_ground_truth`)."""
    facts = getattr(strategy, "record_facts", None)
    return dict(facts(trajectory)) if facts is not None else {}


def append_retry(store: RunStore, record: dict[str, Any]) -> None:
    line = json.dumps(redact(record), ensure_ascii=False, allow_nan=False) + "\n"
    with store.locked():
        with (Path(store.root) / RETRIES).open("a", encoding="utf-8") as fh:
            fh.write(line)


def read_retries(run_dir: str | Path) -> list[dict[str, Any]]:
    path = Path(run_dir) / RETRIES
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
