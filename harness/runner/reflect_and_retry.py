"""Learning after an episode, and re-running it for a learning strategy: ACE's reflect-and-retry rounds.

An online learner's `learn(trajectory, rerun, gold, samples)` (the Strategy protocol; StrategyBase's default learns
nothing) is called after each finished episode with two callables from the harness:
- `rerun()` runs the same task x trial again (the strategy decides what to deliver meanwhile) and returns
  the new episode, or None when it failed outside the agent (infra);
- `gold()` returns the benchmark adapter's gold solution of the task (asked only when ground truth is allowed;
  given only on the train split: a test task's solution never reaches a learner);
- `samples`: the job's episode count (ACE's Curator is told "sample i of N").
`learn` may return facts for the episode's row; `update_lost` is true when a role's call failed after its retries
(RoleCallFailed: the update is lost, the agent's episode stands; docs/failure-accounting.md); they and the
update's own calls (the `learning` role of its usage) are parts of that row (harness/records.py `RowParts.learned`).
Strategies never import an adapter. Every re-run is a real, ledgered episode: its row goes to
`<run>/retries.jsonl` (written by the store, `RunStore.append_retry`; same fields plus `reflection_rerun`: 1, 2,
...), never into results.jsonl, so each (task,
trial) keeps exactly one scored row and tables stay one row per episode; adaptation costs add the retries.
"""

from __future__ import annotations

import itertools
from dataclasses import replace
from typing import Any, Callable, Mapping, Optional, overload

import harness.usage as by_role
from harness import ledger
from harness.benchmarks import Benchmark
from harness.benchmarks.protocol import Task
from harness.errors import INFRA, StrategyError, call_strategy
from harness.records import Outcome
from harness.runner.budget import episode_cost
from harness.runner.stream_state import StreamStates
from harness.serving.faults import ProviderUnusable
from harness.store import RunStore
from strategies import Strategy, Trajectory
from memory_kit.role_client import RoleCallFailed

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
            charge: Callable[[float | None], None] | None = None, states: StreamStates | None = None) -> Learn:
    """-> learn(trajectory, task, trial) -> row facts: `strategy.learn` with rerun and gold; an exception raised
    by the strategy comes out as a StrategyError. Labels and the gold solution reach the strategy only with
    `ground_truth` (the config check allows that on train only). `charge` (budget_usd) is told what each re-run
    and each update's own model calls cost, as they are spent. `states`: the learner's streams, committed after
    each update (harness/runner/stream_state.py)."""
    gold_allowed = ground_truth and bench.settings.split == "train"

    def run(trajectory: Trajectory, task: Task, trial: int) -> Mapping[str, Any]:
        attempts = itertools.count(1)
        key = trajectory.episode

        def rerun() -> Any:
            outcome = run_attempt(task, trial, next(attempts))
            if outcome.stop is not None:  # bad key / unknown model: the job stops, as for any episode
                raise ProviderUnusable(outcome.stop.detail)
            assert outcome.row is not None
            store.append_retry(outcome.row)
            if charge is not None:
                charge(episode_cost(outcome.row))
            if outcome.trajectory is None or outcome.row.get("error") == INFRA:
                return None
            return shown(outcome.trajectory, ground_truth)

        gold = (lambda: bench.gold_solution(task)) if gold_allowed else None
        with ledger.learning() as spent:  # the update's own model calls (ACE's Reflector, Curator): its `learning`
            try:
                facts = call_strategy(strategy, "learn", shown(trajectory, ground_truth), rerun, gold, samples)
            except StrategyError as exc:
                if not isinstance(exc.cause, RoleCallFailed):  # a bug in the learner: the treatment's failure
                    raise
                # a role's call failed after its retries: the update is lost, the agent's episode stands
                store.note(f"online update lost for {task.id} trial {trial}: {exc.cause}")
                facts = {"update_lost": True}
            finally:
                if charge is not None and spent.of("learning"):  # spent even when the update then failed
                    charge(by_role.cost(spent.usage()))
        if states is not None and key is not None:
            states.commit(trial, key)  # before the row: a kill between the two rolls this update back on resume
        learning = {role: u for role, u in spent.usage().items() if role not in by_role.IDLE}
        facts = {"update_lost": False, **(facts if isinstance(facts, Mapping) else {})}
        return {**facts, **({"usage": learning} if learning else {})}

    return run
