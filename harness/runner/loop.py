"""The job loop: one resolved `Job` (harness/runner/job.py) = the benchmark's tasks x trials, concurrent,
resumable, under a one-writer lock.

It reads the run's rows once (resume), builds the strategy, hands the episodes to an executor with what only the
loop knows (an online learner's update: `after`, applied before the next episode of a stream starts), has the
store append each finished `Outcome`'s row with its attempt, and stops the job early for one of the `Stop` reasons
(harness/records.py): the budget, a provider that is unusable or cannot be reached (harness/runner/reach.py),
Ctrl-C. Stopping closes the executor (nothing new starts; what is recorded stays recorded), and the stop is
written into the job's manifest and returned in its summary.
"""

from __future__ import annotations

import gc
import sys
import time
from contextlib import closing, contextmanager
from dataclasses import replace
from typing import Any, Iterator, Optional

from harness import secrets
from harness.benchmarks.protocol import Task
from harness.errors import INFRA, STRATEGY, FailureTally, StrategyError, classify
from harness.records import Outcome, Stop, build_row
from harness.runner import executors
from harness.runner.budget import Budget
from harness.runner.episode import EpisodeRunner, build_strategy
from harness.runner.infra_balance import infra_warning
from harness.runner.job import Job, resolve
from harness.runner.job_rows import JobRows
from harness.runner.online_replay import episode_key, reapply_online_updates
from harness.runner.progress import Progress
from harness.runner.reach import Reachability
from harness.runner.stream_state import StreamStates
from harness.runner.reflect_and_retry import Learn, learner
from harness.serving.faults import ProviderUnusable
from harness.serving.models import ModelSpec, open_model
from harness.settings import JobSettings, plain
from harness.store import RunStore
from harness.store.joblock import job_lock


def run_job(job: Job | JobSettings) -> dict[str, Any]:
    """Run a `Job` (or a job's settings, resolved here) and return its summary."""
    job = job if isinstance(job, Job) else resolve(job)
    store = RunStore(job.run_dir)
    config = plain(job.settings)  # the job's config snapshot, secrets read here (and redacted when written)
    secrets.learn_from_config(config)  # before any child process or write
    with job_lock(store, job.key, job.slug):  # one process per job (JobLocked otherwise)
        with open_model(job.settings.model, log_dir=store.root) as model:  # a managed local server stops on any exit
            return _run_job(job, config, model, store)


def _run_job(job: Job, config: dict[str, Any], model: ModelSpec, store: RunStore) -> dict[str, Any]:
    key, bench, s = job.key, job.adapter(), job.settings
    strategy = build_strategy(job, model, job.artifacts_dir)
    store.open_job(key, config, job.identity)
    if model.simulated:
        store.note(f"{model.name} is SIMULATED: a scripted agent with planted success probabilities "
                   f"(docs/simulated-world.md), not a language model")
    tasks = bench.tasks()
    by_id = {str(task.id): task for task in tasks}
    warn_cut_scenarios(store, key, bench.cut_scenarios(tasks))
    rows = JobRows(key, store.read(), s.retry_infra)  # the one read of results.jsonl
    if rows.dropped["duplicates"]:
        print(f"memdeliv: {key}: {rows.dropped['duplicates']} duplicate record(s) ignored (the last one of each "
              "counts)", file=sys.stderr)
    todo = [(task, trial) for trial in range(job.trials) for task in job.task_order(tasks, trial)
            if (str(task.id), trial) not in rows.done]
    total = len(tasks) * job.trials
    online = job.capabilities.learns_online
    # labels (reward, success, evaluator report, gold) reach an online learner only when it is allowed them
    labels = job.capabilities.uses_ground_truth
    states = StreamStates(strategy, store, job.slug) if online else None
    if states is not None:  # each stream as last committed with its row; then an update lost to a crash (or
        # skipped when its provider was down) is applied again
        states.restore(episode_key(r["task_id"], r["trial"]) for r in rows.latest.values())
        reapply_online_updates(strategy, bench, store.root, rows.latest.values(), labels, states)
    tally, began, ran = FailureTally(), time.perf_counter(), 0
    bar = Progress(key, total, total - len(todo), enabled=s.progress, recorded=rows.settled())
    try:
        one = EpisodeRunner(job, bench, model, strategy, store.root, on_step=bar.step)
        # threads, Ray tasks, or an online learner's streams (side by side when independent, else in order)
        pool = executors.create(job, strategy, served=model.served_kwargs())
        # what the run directory spent so far: its episodes and an online learner's re-runs (retries.jsonl)
        budget = Budget(s.budget_usd, [*rows.all, *store.read_retries()]) if s.budget_usd is not None else None
        learn = None
        if online:  # create() gives an online learner its streams, or one stream in order
            assert isinstance(pool, (executors.InOrderExecutor, executors.StreamsExecutor))
            learn = learner(strategy, bench, pool.runner(one), store, samples=len(tasks), ground_truth=labels,
                            charge=budget.charge if budget is not None else None, states=states)
        reach = Reachability(len(todo), model.name, s.model.max_retries)

        def after(outcome: Outcome) -> Outcome:  # before the next episode of its stream starts
            return with_update(job, outcome, learn, by_id, store)

        stop: Optional[Stop] = None
        # a stop closes the executor (leaving the `with`): nothing new starts, what is recorded stays recorded
        with long_lived_frozen(), closing(pool.run(todo, one, budget=budget, after=after)) as outcomes:
            try:
                for outcome in outcomes:
                    if outcome.stop is not None:
                        if outcome.stop.reason == "budget":  # the episodes in flight still finish and are recorded
                            continue
                        stop = outcome.stop
                        break
                    assert outcome.row is not None
                    row = store.append(outcome.row, attempt=rows.attempts.get(outcome.row.episode, 1))
                    rows.add(row)
                    tally.add(row)
                    bar.update(1, row)
                    ran += 1
                    if (unreachable := reach.see(outcome)) is not None:  # recorded first: a rerun runs it again
                        stop = Stop("provider_unreachable", unreachable)
                        break
            except ProviderUnusable as exc:  # found by an online learner's re-run (harness/runner/reflect_and_retry.py)
                stop = Stop("provider_unusable", str(exc))
            except KeyboardInterrupt:
                stop = Stop("interrupted", "Ctrl-C")
    finally:
        bar.close()
        bench.close()  # e.g. AppWorld's engine workers: never left running
    return close_job(job, store, rows, model, tally, pool.name, budget, ran, len(tasks), time.perf_counter() - began,
                     online, stop)


@contextmanager
def long_lived_frozen() -> Iterator[None]:
    """For the job's episodes, the objects alive when they start (modules, LiteLLM's price map, the tasks, the rows
    read) are set aside from Python's cyclic collector (gc.freeze), and given back after (gc.unfreeze): they
    outlive the job, yet every full collection, which an episode's many allocations (τ²'s databases) trigger
    again and again, would walk them all. Nothing is kept longer than the job (docs/performance.md). A process that
    has frozen objects itself (a host that forks workers, or another job running beside this one) is left as it is:
    unfreezing at the end would hand its objects back to the collector too."""
    if gc.get_freeze_count():
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def with_update(job: Job, outcome: Outcome, learn: Optional[Learn], by_id: dict[str, Task],
                store: RunStore) -> Outcome:
    """An online learner's episode with its update applied: its row built again from its parts, the update among
    them (a row is never edited). Any other episode as it came."""
    row, parts = outcome.row, outcome.parts
    if learn is None or outcome.trajectory is None or parts is None or row is None or \
            row.get("error") in (INFRA, STRATEGY):
        return outcome
    # e.g. ACE online: the playbook evolves during the run; a crash there is the treatment's. The update comes
    # before the row and carries the episode key, so neither is lost or doubled by a kill between the two (a
    # resumed run re-runs the episode and skips the applied update).
    task_id, trial = row.episode
    try:
        learned = learn(replace(outcome.trajectory, episode=episode_key(task_id, trial)), by_id[task_id], trial)
    except StrategyError as exc:
        error, detail = classify(exc)
        if error == INFRA:  # its provider failed after retries: the episode itself stands
            store.note(f"{job.key}: online update skipped for {task_id} trial {trial}: {detail}")
            return outcome
        learned = {"success": False, "error": error, "error_detail": detail}
    parts = parts.with_update(dict(learned or {}))
    return replace(outcome, row=build_row(parts), parts=parts)


def close_job(job: Job, store: RunStore, rows: JobRows, model: ModelSpec, tally: FailureTally, executor: str,
              budget: Optional[Budget], ran: int, tasks: int, wall_s: float, online: bool,
              stop: Optional[Stop]) -> dict[str, Any]:
    """The job's manifest facts and end-of-job summary, from the rows it read and wrote; `stopped` when it ended
    early (the budget's stop is read here: on Ray no episode comes back held, the driver just submits no more)."""
    key, bench = job.key, job.adapter()
    if rows.cache_unreported():
        note_unreported_cache(store, model.name, local=bool(model.api_base))
    totals = rows.totals()  # over every launch of the job (a resume adds to them)
    episodes_done, total, skipped = len(rows.done) + ran, tasks * job.trials, len(rows.done)
    if stop is None and budget is not None and budget.stopped:
        stop = Stop("budget", budget.line(episodes_done, total))
        print(f"memdeliv: {key}: {stop.detail}; rerun with run_name={job.run_name} and a higher budget_usd to "
              "resume", file=sys.stderr)
    stopped = {"stopped": stop.facts()} if stop is not None else {}
    store.close_job(key, tasks=tasks, trials=job.trials, ran=ran, skipped=skipped,
                    **({"budget": budget.facts(episodes_done, total)} if budget is not None else {}),
                    infra_rerun=len(rows.attempts), **{**tally.facts(), **totals}, executor=executor,
                    # an online update lost after its retries: counted, not only in history
                    **({"updates_lost": rows.updates_lost()} if online else {}),
                    wall_s=round(wall_s, 3), **stopped, **bench.manifest_facts())
    tally.warn(key)
    return {"job": key, "run_dir": str(store.root), "ran": ran, "skipped": skipped,
            **stopped,
            # errors over the whole job, as its progress line counts them (a resume's earlier episodes too)
            "infra_errors": totals["infra_errors"], "errors": totals["errors"], "retried": totals["retried"],
            "recovered": totals["recovered"], "infra_rerun": len(rows.attempts), "executor": executor,
            "infra_warning": infra_warning(rows.all, key)}


def warn_cut_scenarios(store: RunStore, key: str, cut: list[str]) -> None:
    """A LIMIT (or task_ids) that keeps only part of a scenario: SGC will skip it; say so before running."""
    if not cut:
        return
    text = (f"{key}: {len(cut)} scenario(s) only partly selected by benchmark.limit/task_ids "
            f"({', '.join(cut[:5])}{', ...' if len(cut) > 5 else ''}): SGC uses complete scenarios only")
    print(f"memdeliv: warning: {text}", file=sys.stderr)
    store.note(text)


def note_unreported_cache(store: RunStore, model: str, local: bool = False) -> None:
    """cached_tokens is null where the provider reported none; say so where a reader of the run looks."""
    why = (" (llama-cpp-python's server never reports them; bench/cache.py measures prefix reuse from the "
           "local server's log instead)") if local else ""
    store.note(f"{model}: the provider did not report cached prompt tokens on every call, so cached_tokens "
               f"is null there{why}")
