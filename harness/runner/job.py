"""Batch layer: one job (model x strategy x benchmark) = tasks x trials, concurrent, resumable."""

from __future__ import annotations

import hashlib
import sys
import time
from contextlib import closing
from dataclasses import replace
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

import strategies
from harness import benchmarks, secrets
from harness.assembly.options import DEFAULTS as ASSEMBLY_DEFAULTS
from harness.config import job_memory
from harness.errors import INFRA, STRATEGY, FailureTally, StrategyError, classify
from harness.ledger import MemoryTokenCounter
from harness.memory import provenance
from harness.runner import executors
from harness.runner.episode import EpisodeRunner, build_strategy, job_key, slug
from harness.runner.online_replay import episode_key, reapply_online_updates
from harness.runner.budget import Budget
from harness.runner.progress import Progress
from harness.runner.reflect_and_retry import learner
from harness.serving.models import ModelSpec, open_model
from harness.store import RunStore, settled
from harness.store.joblock import job_lock

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
    with job_lock(store, key, slug(key.replace("/", "__"))):  # one process per job (JobLocked otherwise)
        with open_model(cfg.model, log_dir=store.root) as model:  # a managed local server stops on any exit
            return _run_job(cfg, bench, model, store)


def _run_job(cfg: Any, bench: Any, model: ModelSpec, store: RunStore) -> dict[str, Any]:
    key = job_key(cfg)
    strategy = build_strategy(cfg, model, store.root / "memory" / slug(key.replace("/", "__")), bench)
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
    one = EpisodeRunner(cfg, bench, model, strategy, MemoryTokenCounter(model.name), store.root)

    online = bool(getattr(strategy, "learns_online", False))
    # labels (reward, success, evaluator report, gold) reach an online learner only when it is allowed them
    labels = strategies.uses_ground_truth(cfg.strategy.name, OmegaConf.to_container(cfg.strategy.options))
    if online:  # an update lost to a crash (or skipped when its provider was down) is applied on resume
        reapply_online_updates(strategy, bench, store, latest.values(), labels)
    learn = learner(strategy, bench, one, store, samples=len(tasks), ground_truth=labels) if online else None
    # an online learner runs strictly in order (trial 0's tasks, then trial 1's...): each episode sees the memory
    # its stream's previous episode left, so one stream's task order is fixed whatever `concurrency` says
    sequential = online
    pool = executors.create(cfg, learns_online=online)  # threads here, or Ray tasks (the driver writes)
    tally = FailureTally()
    began = time.perf_counter()
    budget = Budget(cfg.budget_usd, store.results_path) if cfg.get("budget_usd") is not None else None
    start = budget.gate(one) if budget is not None else one  # None: an episode the budget held back
    ran = 0
    bar = Progress(key, total, total - len(todo), enabled=cfg.progress,
                   recorded=[r for k, r in latest.items() if k in done])
    try:
        finished = (start(task, trial) for task, trial in todo) if sequential else \
            pool.run(todo, start, served=model.served_kwargs())
        with closing(finished) as records:  # Ctrl-C: stops the pool; what is recorded stays recorded
            for item in records:
                if item is None:  # held back by budget_usd: nothing ran, nothing is recorded
                    continue
                record, trajectory = item  # the trajectory: for an online learner, never stored
                record["attempt"] = attempts.get((record["task_id"], record["trial"]), 1)
                if cfg.model.get("gguf"):  # `openai/<alias>` is only LiteLLM's route to the local server
                    record["model_server"] = LOCAL_SERVER
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
                bar.update(1, record)
                ran += 1
    finally:
        bar.close()
        bench.close()  # e.g. AppWorld's engine workers: never left running
    note_unreported_cache(store, key, model.name, local=bool(model.api_base))
    totals = store.job_totals(key)  # over every launch of the job (a resume adds to them)
    episodes_done = len(done) + ran
    if budget is not None and budget.stopped:
        print(f"memdeliv: {key}: {budget.line(episodes_done, total)}; rerun with run_name={cfg.run_name} and a "
              "higher budget_usd to resume", file=sys.stderr)
    store.close_job(key, tasks=len(tasks), trials=cfg.benchmark.trials, ran=ran, skipped=len(done),
                    **({"budget": budget.facts(episodes_done, total)} if budget is not None else {}),
                    infra_rerun=len(attempts), **{**tally.facts(), **totals}, executor=pool.name,
                    **({"updates_lost": sum(bool(r.get("update_lost")) for r in store.records() if r["job"] == key)}
                       if online else {}),  # an online update lost after its retries: counted, not only in history
                    wall_s=round(time.perf_counter() - began, 3), **bench.manifest_facts())
    tally.warn(key)
    return {"job": key, "run_dir": str(store.root), "ran": ran, "skipped": len(done),
            **({"budget_stopped": budget.line(episodes_done, total)} if budget is not None and budget.stopped else {}),
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
