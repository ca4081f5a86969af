"""Batch layer: one job (model x strategy x benchmark) = tasks x trials, concurrent, resumable."""

from __future__ import annotations

import hashlib
import random
import sys
import time
from contextlib import closing
from dataclasses import replace
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

import strategies
from harness import benchmarks, executors, provenance, retries, secrets
from harness.assembly import DEFAULTS as ASSEMBLY_DEFAULTS, variant_suffix
from harness.config import job_memory
from harness.errors import INFRA, STRATEGY, FailureTally, StrategyError, classify
from harness.joblock import job_lock
from harness.ledger import MemoryTokenCounter
from harness.model_client import ProviderUnusable, provider_stats
from harness.models import ModelSpec, open_model
from harness.progress import Progress
from harness.resume import episode_key, reapply_online_updates
from harness.store import RunStore, now_iso, settled

SCHEMA_VERSION = 1


def trial_seeds(seed: int, trials: int) -> list[int]:
    """Same derivation as tau2's run_tasks, so trial seeds match a plain `tau2 run`."""
    rng = random.Random(seed)
    return [rng.randint(0, 1000000) for _ in range(trials)]


def job_key(cfg: Any) -> str:
    """benchmark/split/model/strategy, plus `@placement=...,answer_mode=...` for non-default request assembly."""
    return (f"{cfg.benchmark.name}/{cfg.benchmark.split}/{cfg.model.name}/{cfg.strategy.name}"
            f"{variant_suffix(cfg.benchmark, benchmarks.default_placement(cfg.benchmark))}")


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in text)


def _file_digest(path: str | None) -> str | None:
    if not path or not Path(path).is_file():
        return None
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]


def identity(cfg: Any) -> dict[str, Any]:
    """What must not change when a run is resumed (limit, trials, concurrency may)."""
    m, s, b = cfg.model, cfg.strategy, cfg.benchmark
    return {
        "model": {"name": m.name, "user_name": m.user_name, "kwargs": OmegaConf.to_container(m.kwargs),
                  "tool_mode": m.tool_mode, "gguf": m.gguf,
                  **({"context_window": m.context_window} if m.context_window else {})},
        "strategy": {"name": s.name, "options": OmegaConf.to_container(s.options)},
        "memory": {"path": job_memory(cfg), "sha256_16": _file_digest(job_memory(cfg))},
        "benchmark": {"name": b.name, "split": b.split, "seed": b.seed, "max_steps": b.max_steps,
                      "max_errors": b.max_errors, "placement": b.placement,
                      # only when not the default, so runs made before these options existed still resume
                      **{k: b[k] for k, v in ASSEMBLY_DEFAULTS.items() if b[k] != v}},
    }


def run_job(cfg: Any) -> dict[str, Any]:
    bench = benchmarks.create(cfg.benchmark)
    bench.validate()
    provenance.job_provenance(cfg, bench)  # in-sample memory or labels off train: refused before any write
    store = RunStore(Path(cfg.runs_dir) / cfg.run_name)
    key = job_key(cfg)
    secrets.learn_from_config(OmegaConf.to_container(cfg, resolve=True))  # before any child process or write
    with job_lock(store, key, _slug(key.replace("/", "__"))):  # one process per job (JobLocked otherwise)
        with open_model(cfg.model, log_dir=store.root) as model:  # a managed local server stops on any exit
            return _run_job(cfg, bench, model, store)


def build_strategy(cfg: Any, model: ModelSpec, artifacts_dir: Path | None, bench: Any = None) -> Any:
    options = OmegaConf.to_container(cfg.strategy.options)
    # what an online learner writes as its playbook's learned_from (it adds the tasks it learned from)
    source = {"benchmark": cfg.benchmark.name, "split": cfg.benchmark.split, "model": model.name,
              "ground_truth": strategies.uses_ground_truth(cfg.strategy.name, options),
              "task_set": bench.task_set if bench is not None else None}
    return strategies.create(cfg.strategy.name, strategies.StrategyContext(
        options=options, memory_path=job_memory(cfg), artifacts_dir=artifacts_dir, model=model.name,
        model_kwargs={**OmegaConf.to_container(cfg.model.kwargs), **model.served_kwargs()}, learned_from=source))


class Episodes:
    """Runs one (task, trial) of a job and returns its record: the same code here and in a Ray worker
    (harness/executors.py), which passes a scratch `root` and hands the trajectory file to the driver."""

    def __init__(self, cfg: Any, bench: Any, model: ModelSpec, strategy: Any, counter: MemoryTokenCounter,
                 root: Path):
        key = job_key(cfg)
        self.bench, self.model, self.strategy, self.counter, self.root = bench, model, strategy, counter, root
        self.slug = _slug(key.replace("/", "__"))
        self.seeds = trial_seeds(cfg.benchmark.seed, cfg.benchmark.trials)
        self.stopped: ProviderUnusable | None = None  # set by the first episode that finds the provider unusable
        self.common = {"schema": SCHEMA_VERSION, "run": cfg.run_name, "job": key, "benchmark": cfg.benchmark.name,
                       "split": cfg.benchmark.split, "model": model.name, "user_model": model.user_name,
                       "strategy": cfg.strategy.name, "memory": job_memory(cfg),
                       # IN-SAMPLE | unknown provenance | held-out | None (no memory): tables label the rows
                       "memory_provenance": provenance.job_provenance(cfg, bench),
                       "placement": cfg.benchmark.placement, "context_policy": cfg.benchmark.context_policy,
                       "answer_mode": cfg.benchmark.answer_mode}

    def __call__(self, task: Any, trial: int, rerun: int = 0) -> dict[str, Any]:
        """rerun > 0: a learning strategy's re-run of the same episode (harness/retries.py)."""
        if self.stopped is not None:  # the job is stopping: episodes queued behind it make no call
            raise self.stopped
        started_at = now_iso()
        again = f"__r{rerun}" if rerun else ""
        rel = Path("trajectories") / self.slug / f"{_slug(str(task.id))}__t{trial}{again}.json"
        for_trial = getattr(self.strategy, "for_trial", None)  # an online learner: one stream per trial
        strategy = for_trial(trial) if for_trial is not None else self.strategy
        try:
            with provider_stats() as stats:  # retries of this episode's model calls
                fields = self.bench.run_episode(task, trial=trial, seed=self.seeds[trial], strategy=strategy,
                                                model=self.model, counter=self.counter,
                                                trajectory_path=self.root / rel)
            fields = {**fields, **stats.fields(), **retries.record_facts(strategy, fields.get("_trajectory"))}
        except ProviderUnusable as exc:  # bad key / unknown model: no record; the job stops (harness/run.py)
            self.stopped = exc
            raise
        except Exception as exc:  # the episode machinery itself failed: keep the sweep alive, label it
            error, detail = classify(exc)  # "harness" unless it is a provider/worker failure after retries
            return self.failed(task, trial, error, detail, started_at)
        return {**self.common, "trial": trial, "seed": self.seeds[trial], **fields,
                **({"reflection_rerun": rerun} if rerun else {}), "trajectory": str(rel), "started_at": started_at}

    def failed(self, task: Any, trial: int, error: str, detail: str, started_at: str) -> dict[str, Any]:
        """The record of an episode that produced no result of its own (no trajectory)."""
        return {**self.common, "trial": trial, "seed": self.seeds[trial], "task_id": task.id, "success": False,
                "reward": 0.0, "steps": 0, "error": error, "error_detail": detail, "trajectory": None,
                "started_at": started_at}


def _run_job(cfg: Any, bench: Any, model: ModelSpec, store: RunStore) -> dict[str, Any]:
    key = job_key(cfg)
    slug = _slug(key.replace("/", "__"))
    strategy = build_strategy(cfg, model, store.root / "memory" / slug, bench)
    extra = bench.identity_extra()  # e.g. τ²: the task set of a data dir, the judge
    store.open_job(key, OmegaConf.to_container(cfg, resolve=True), {**identity(cfg), **extra})
    if model.simulated:
        store.note(f"{model.name} is SIMULATED: a scripted agent with planted success probabilities "
                   f"(docs/simulated-world.md), not a language model")

    tasks = bench.tasks()
    by_id = {str(task.id): task for task in tasks}
    warn_cut_scenarios(store, key, bench.cut_scenarios(tasks))
    retry_infra = bool(cfg.get("retry_infra", True))
    latest, dropped = store.latest(key)
    done = settled(latest, retry_infra)
    attempts = {k: int(r.get("attempt", 1)) + 1 for k, r in latest.items() if k not in done}  # infra, run again
    if dropped["duplicates"]:
        print(f"memdeliv: {key}: {dropped['duplicates']} duplicate record(s) ignored (the last one of each counts)",
              file=sys.stderr)
    todo = [(task, trial) for trial in range(cfg.benchmark.trials) for task in tasks if (task.id, trial) not in done]
    total = len(tasks) * cfg.benchmark.trials
    one = Episodes(cfg, bench, model, strategy, MemoryTokenCounter(model.name), store.root)

    online = bool(getattr(strategy, "learns_online", False))
    # labels (reward, success, evaluator report, gold) reach an online learner only when it is allowed them
    labels = strategies.uses_ground_truth(cfg.strategy.name, OmegaConf.to_container(cfg.strategy.options))
    if online:  # an update lost to a crash (or skipped when its provider was down) is applied on resume
        reapply_online_updates(strategy, bench, store, latest.values(), labels)
    learn = retries.learner(strategy, bench, one, store, samples=len(tasks), ground_truth=labels) if online else None
    # an online learner runs strictly in order (trial 0's tasks, then trial 1's...): each episode sees the memory
    # its stream's previous episode left, so one stream's task order is fixed whatever `concurrency` says
    sequential = online
    pool = executors.create(cfg, learns_online=online)  # threads here, or Ray tasks (the driver writes)
    tally = FailureTally()
    began = time.perf_counter()
    bar = Progress(key, total, total - len(todo), enabled=cfg.progress)
    try:
        finished = (one(task, trial) for task, trial in todo) if sequential else \
            pool.run(todo, one, served=model.served_kwargs())
        with closing(finished) as records:  # Ctrl-C: stops the pool; what is recorded stays recorded
            for record in records:
                record["attempt"] = attempts.get((record["task_id"], record["trial"]), 1)
                if cfg.model.get("gguf"):  # `openai/<alias>` is only LiteLLM's route to the local server
                    record["model_server"] = LOCAL_SERVER
                trajectory = record.pop("_trajectory", None)
                if learn is not None and trajectory is not None and record.get("error") not in (INFRA, STRATEGY):
                    # e.g. ACE online: the playbook evolves during the run; a crash there is the treatment's. The
                    # update comes before the record and carries the episode key, so neither is lost or doubled
                    # by a kill between the two (a resumed run re-runs the episode and skips the applied update).
                    try:
                        record.update(learn(replace(trajectory, episode=episode_key(record["task_id"], record["trial"])),
                                            by_id[str(record["task_id"])], record["trial"]) or {})
                    except StrategyError as exc:
                        error, detail = classify(exc)
                        if error == INFRA:  # its provider failed after retries: the episode itself stands
                            store.note(f"{key}: online update skipped for {record['task_id']} trial "
                                       f"{record['trial']}: {detail}")
                        else:
                            record.update(success=False, error=error, error_detail=detail)
                store.append(record)
                tally.add(record)
                bar.update(1)
    finally:
        bar.close()
        bench.close()  # e.g. AppWorld's engine workers: never left running
    note_unreported_cache(store, key, model.name, local=bool(model.api_base))
    totals = store.job_totals(key)  # over every launch of the job (a resume adds to them)
    store.close_job(key, tasks=len(tasks), trials=cfg.benchmark.trials, ran=len(todo), skipped=len(done),
                    infra_rerun=len(attempts), **{**tally.facts(), **totals}, executor=pool.name,
                    **({"updates_lost": sum(bool(r.get("update_lost")) for r in store.records() if r["job"] == key)}
                       if online else {}),  # an online update lost after its retries: counted, not only in history
                    wall_s=round(time.perf_counter() - began, 3), **bench.manifest_facts())
    tally.warn(key)
    return {"job": key, "run_dir": str(store.root), "ran": len(todo), "skipped": len(done),
            "infra_errors": tally.errors.get(INFRA, 0), "errors": dict(tally.errors), "retried": totals["retried"],
            "recovered": totals["recovered"], "infra_rerun": len(attempts), "executor": pool.name}


LOCAL_SERVER = "local llama.cpp"


def warn_cut_scenarios(store: RunStore, key: str, cut: list[str]) -> None:
    """A LIMIT (or task_ids) that keeps only part of a scenario: SGC will skip it; say so before running."""
    if not cut:
        return
    text = (f"{key}: {len(cut)} scenario(s) only partly selected by benchmark.limit/task_ids "
            f"({', '.join(cut[:5])}{', ...' if len(cut) > 5 else ''}): SGC uses complete scenarios only")
    print(f"memdeliv: warning: {text}", file=sys.stderr)
    store.note(text)


def note_unreported_cache(store: RunStore, key: str, model: str, local: bool = False) -> None:
    """cached_tokens is null where the provider reported none; say so where a reader of the run looks."""
    rows = [r for r in store.records() if r["job"] == key and r.get("prompt_tokens")]
    if any(r.get("cached_tokens") is None for r in rows):
        why = (" (llama-cpp-python's server never reports them; bench/cache.py measures prefix reuse from the "
               "local server's log instead)") if local else ""
        store.note(f"{model}: the provider did not report cached prompt tokens on every call, so cached_tokens "
                   f"is null there{why}")
