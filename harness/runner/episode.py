"""One episode of a job: the strategy built from the job's config, and the runner of one (task, trial).

Shared by the job loop (harness/runner/job.py) and a Ray worker (harness/runner/executors.py), so neither imports
the other."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

import strategies
from harness import benchmarks
from harness.assembly.job_config import variant_suffix
from harness.config import job_memory
from harness.errors import classify
from harness.ledger import MemoryTokenCounter
from harness.memory import provenance
from harness.record_fields import (ERROR, ERROR_DETAIL, REWARD, SEED, STARTED_AT, STEPS, SUCCESS, TASK_ID,
                                    TRAJECTORY, TRIAL)
from harness.records import Finished
from harness.runner.reflect_and_retry import record_facts
from harness.serving.model_client import ProviderUnusable, provider_stats
from harness.serving.models import ModelSpec
from harness.store import now_iso

SCHEMA_VERSION = 1
TRAJECTORIES = "trajectories"  # the run directory's folder of trajectory files


def trial_seeds(seed: int, trials: int) -> list[int]:
    """Same derivation as tau2's run_tasks, so trial seeds match a plain `tau2 run`."""
    rng = random.Random(seed)
    return [rng.randint(0, 1000000) for _ in range(trials)]


def job_key(cfg: Any) -> str:
    """benchmark/split/model/strategy, plus `@placement=...,answer_mode=...` for non-default request assembly."""
    variant = cfg.strategy.get("variant")  # e.g. a dose cell (configs/strategy/dose/): its options set apart
    strategy = f"{cfg.strategy.name}({variant})" if variant else cfg.strategy.name
    return (f"{cfg.benchmark.name}/{cfg.benchmark.split}/{cfg.model.name}/{strategy}"
            f"{variant_suffix(cfg.benchmark, benchmarks.default_placement(cfg.benchmark))}")


def slug(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in text)


def build_strategy(cfg: Any, model: ModelSpec, artifacts_dir: Path | None, bench: Any = None) -> Any:
    options = OmegaConf.to_container(cfg.strategy.options)
    # what an online learner writes as its playbook's learned_from (it adds the tasks it learned from)
    source = {"benchmark": cfg.benchmark.name, "split": cfg.benchmark.split, "model": model.name,
              "ground_truth": strategies.uses_ground_truth(cfg.strategy.name, options),
              "task_set": bench.task_set if bench is not None else None}
    return strategies.create(cfg.strategy.name, strategies.StrategyContext(
        options=options, memory_path=job_memory(cfg), artifacts_dir=artifacts_dir, model=model.name,
        model_kwargs={**OmegaConf.to_container(cfg.model.kwargs), **model.served_kwargs()}, learned_from=source))


class EpisodeRunner:
    """Runs one (task, trial) of a job and returns its record: the same code in the runner and in a Ray worker
    (harness/runner/executors.py), which passes a scratch `root` and hands the trajectory file to the driver."""

    def __init__(self, cfg: Any, bench: Any, model: ModelSpec, strategy: Any, counter: MemoryTokenCounter,
                 root: Path):
        key = job_key(cfg)
        self.bench, self.model, self.strategy, self.counter, self.root = bench, model, strategy, counter, root
        self.slug = slug(key.replace("/", "__"))
        self.seeds = trial_seeds(cfg.benchmark.seed, cfg.benchmark.trials)
        self.stopped: ProviderUnusable | None = None  # set by the first episode that finds the provider unusable
        self.common = {"schema": SCHEMA_VERSION, "run": cfg.run_name, "job": key, "benchmark": cfg.benchmark.name,
                       "split": cfg.benchmark.split, "model": model.name, "user_model": model.user_name,
                       "strategy": cfg.strategy.name, "memory": job_memory(cfg),
                       **({"strategy_variant": cfg.strategy.variant} if cfg.strategy.get("variant") else {}),
                       # IN-SAMPLE | unknown provenance | held-out | None (no memory): tables label the rows
                       "memory_provenance": provenance.job_provenance(cfg, bench),
                       "placement": cfg.benchmark.placement, "context_policy": cfg.benchmark.context_policy,
                       "answer_mode": cfg.benchmark.answer_mode}

    def __call__(self, task: Any, trial: int, rerun: int = 0) -> Finished:
        """The episode's results.jsonl record and its trajectory (None when the episode produced no result).
        rerun > 0: a learning strategy's re-run of the same episode (harness/runner/reflect_and_retry.py)."""
        if self.stopped is not None:  # the job is stopping: episodes queued behind it make no call
            raise self.stopped
        started_at = now_iso()
        again = f"__r{rerun}" if rerun else ""
        rel = Path(TRAJECTORIES) / self.slug / f"{slug(str(task.id))}__t{trial}{again}.json"
        for_trial = getattr(self.strategy, "for_trial", None)  # an online learner: one stream per trial
        strategy = for_trial(trial) if for_trial is not None else self.strategy
        try:
            with provider_stats() as stats:  # retries of this episode's model calls
                episode, trajectory = self.bench.run_episode(task, trial=trial, seed=self.seeds[trial],
                                                             strategy=strategy, model=self.model,
                                                             counter=self.counter, trajectory_path=self.root / rel)
            fields = {**episode.fields(), **stats.fields(), **record_facts(strategy, trajectory)}
        except ProviderUnusable as exc:  # bad key / unknown model: no record; the job stops (harness/run.py)
            self.stopped = exc
            raise
        except Exception as exc:  # the episode machinery itself failed: keep the sweep alive, label it
            error, detail = classify(exc)  # "harness" unless it is a provider/worker failure after retries
            return self.failed(task, trial, error, detail, started_at), None
        return {**self.common, TRIAL: trial, SEED: self.seeds[trial], **fields,
                **({"reflection_rerun": rerun} if rerun else {}), TRAJECTORY: str(rel), STARTED_AT: started_at}, \
            trajectory

    def failed(self, task: Any, trial: int, error: str, detail: str, started_at: str) -> dict[str, Any]:
        """The record of an episode that produced no result of its own (no trajectory)."""
        return {**self.common, TRIAL: trial, SEED: self.seeds[trial], TASK_ID: task.id, SUCCESS: False,
                REWARD: 0.0, STEPS: 0, ERROR: error, ERROR_DETAIL: detail, TRAJECTORY: None,
                STARTED_AT: started_at}
