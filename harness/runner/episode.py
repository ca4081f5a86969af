"""One episode of a job: the strategy built for the job, and the runner of one (task, trial) that makes its row.

Shared by the job loop (harness/runner/loop.py) and a Ray worker (harness/runner/ray_executor.py), so neither
imports the other. Whatever happens, an episode comes back as one `Outcome` (harness/records.py): its row, or a
labelled failure row, or a stop when the provider is unusable (harness/records.py's `Stop`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Optional

import strategies
from harness import ledger
from harness.errors import INFRA, call_strategy, classify
from harness.benchmarks import Benchmark
from harness.benchmarks.protocol import Task
from harness.ledger import Ledger, MemoryTokenCounter
from harness.records import Outcome, RowParts, Stop, build_row, failure
from harness.row import Row
from harness.runner.job import Job, slug
from harness.runner.reflect_and_retry import shown
from harness.serving import provider_errors
from harness.serving.faults import ProviderUnusable
from harness.serving.models import ModelSpec
from harness.settings import plain
from strategies import Strategy
from memory_kit.role_client import RoleClient
from harness.store import now_iso


def build_strategy(job: Job, model: ModelSpec, artifacts_dir: Optional[Path]) -> Strategy:
    """The job's strategy; artifacts_dir: where a learning strategy saves its memory (None in a Ray worker)."""
    # what an online learner writes as its playbook's learned_from (it adds the tasks it learned from)
    s = job.settings
    source = {"benchmark": s.benchmark.name, "split": s.benchmark.split, "model": model.name,
              "ground_truth": job.capabilities.uses_ground_truth,
              "task_set": job.benchmark.task_set if job.benchmark is not None else None}
    kwargs = {**plain(s.model.kwargs), **model.served_kwargs()}  # a secret among them read here, in this process
    # every role of the strategy calls the run's model as the agent does: its key, retries, backoff, errors' kinds
    client = RoleClient(model.name, kwargs, api_key_env=s.model.api_key_env, max_retries=s.model.max_retries,
                        retry_backoff_s=s.model.retry_backoff_s, classify=provider_errors.kind_of)
    return strategies.create(job.strategy_name, strategies.StrategyContext(
        options=job.strategy_options(), memory_path=job.memory, artifacts_dir=artifacts_dir, model=model.name,
        model_kwargs=kwargs, client=client, learned_from=source))


class EpisodeRunner:
    """Runs one (task, trial) of a job and returns its Outcome: the same code in the job loop and in a Ray worker,
    which passes a scratch `root` and hands the trajectory file to the driver. `on_step`: told of every agent
    step (the job's progress line)."""

    def __init__(self, job: Job, bench: Benchmark, model: ModelSpec, strategy: Strategy, root: Path,
                 on_step: Optional[Callable[[], None]] = None):
        self.job, self.bench, self.model, self.strategy, self.root = job, bench, model, strategy, root
        self.counter = MemoryTokenCounter(model.name)
        self.on_step = on_step
        self._unusable: Optional[Stop] = None  # the first episode that finds the provider unusable says so

    def __call__(self, task: Task, trial: int, rerun: int = 0, view: Optional[Strategy] = None) -> Outcome:
        """rerun > 0: a learning strategy's re-run of the same episode (harness/runner/reflect_and_retry.py);
        view: what the trial sees, sent by the driver with an online learner's episode on Ray (else the
        strategy's own `for_trial`)."""
        if self._unusable is not None:  # every call would fail the same way: episodes queued behind make none
            return Outcome(stop=self._unusable)
        started_at = now_iso()
        again = f"__r{rerun}" if rerun else ""
        rel = self.job.trajectories / f"{slug(str(task.id))}__t{trial}{again}.json"
        strategy = view if view is not None else self.strategy.for_trial(trial)  # an online learner: its stream
        with ledger.episode(on_step=self.on_step) as calls:
            try:
                episode, trajectory = self.bench.run_episode(task, trial=trial, seed=self.job.seeds[trial],
                                                             strategy=strategy, model=self.model,
                                                             counter=self.counter, trajectory_path=self.root / rel)
                # the episode as the strategy may see it (no verdict without ground truth); a raise is the strategy's
                seen = shown(trajectory, self.job.capabilities.uses_ground_truth)
                facts = call_strategy(strategy, "record_facts", seen)
            except ProviderUnusable as exc:  # bad key / unknown model: no row; the job stops (harness/run.py)
                self._unusable = Stop("provider_unusable", str(exc))
                return Outcome(stop=self._unusable)
            except Exception as exc:  # the episode machinery itself failed: keep the sweep alive, label it
                error, detail = classify(exc)  # "harness" unless it is a provider/worker failure after retries
                row = self.failed(task, trial, error, detail, started_at)
                return Outcome(row=row, unreachable=unreachable(row, calls))
        parts = RowParts(self.job.row_fields, trial, episode, seed=self.job.seeds[trial],
                         order=self.job.order_of(trial), started_at=started_at, trajectory=str(rel),
                         facts=facts, rerun=rerun)
        row = build_row(parts)
        return Outcome(row=row, parts=parts, trajectory=trajectory, unreachable=unreachable(row, calls))

    def failed(self, task: Task, trial: int, error: str, detail: str, started_at: str) -> Row:
        """The row of an episode that produced no result of its own (no trajectory)."""
        return build_row(RowParts(self.job.row_fields, trial, failure(task.id, error, detail),
                                  seed=self.job.seeds[trial], order=self.job.order_of(trial), started_at=started_at))


def unreachable(row: Row, calls: Ledger) -> Optional[str]:
    """The endpoint an infra episode could not reach (a call that failed to connect on every attempt), else None."""
    return calls.provider.unreachable if row.get("error") == INFRA else None
