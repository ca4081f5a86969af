"""`python -m harness.plan_facts --out FILE HYDRA_OVERRIDES...`: the facts `make plan` needs from the harness,
written to a file that analysis/plan.py reads (analysis never imports the harness). Nothing is run or paid for.

Facts: the composed model config (agent, user simulator, price overrides), the judge, the task ids the sweep
would run (split, limit, task_ids applied by the benchmark's adapter), each task's count of gold agent actions
(from the adapter's `gold_solution`, where it has one), how many tasks the train split has (what `make memory`
would learn from), and `max_steps`. A bad config exits 2 with one line, as `make sweep` does.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from dataclasses import replace
from typing import Any

from harness import benchmarks
from harness.settings import JobSettings, plain


def gold_actions(text: str | None) -> int | None:
    """Gold agent actions in an adapter's gold_solution text: τ²'s lines `assistant: name(...)`."""
    if not text:
        return None
    lines = [line for line in text.splitlines() if "(" in line and not line.startswith("information")]
    agent = [line for line in lines if line.startswith("assistant:")]
    return len(agent) if agent else len(lines)


def facts(cfg: JobSettings) -> dict[str, Any]:
    bench = benchmarks.create(cfg.benchmark)
    bench.validate()
    tasks = list(bench.tasks())
    gold = {}
    for task in tasks:
        try:
            gold[str(task.id)] = gold_actions(bench.gold_solution(task))
        except Exception:  # an adapter without gold actions for this task: the plan uses its prior
            gold[str(task.id)] = None
    train = None
    if cfg.benchmark.split != "train":
        try:
            node = replace(cfg.benchmark, split="train", limit=None, task_ids=None)
            train = len(list(benchmarks.create(node).tasks()))
        except Exception:  # a benchmark without a train split
            train = None
    else:
        train = len(tasks)
    bench.close()
    model = plain(cfg.model)
    return {"benchmark": cfg.benchmark.name, "split": cfg.benchmark.split, "trials": cfg.benchmark.trials,
            "orders": cfg.benchmark.orders,
            "max_steps": cfg.benchmark.max_steps, "placement": cfg.benchmark.placement,
            "judge_model": cfg.benchmark.judge_model, "needs_judge": bool(bench.needs_judge()),
            "model": {k: model.get(k) for k in ("name", "user_name", "price_per_mtok_in", "price_per_mtok_out",
                                                "price_per_mtok_cached", "price_per_mtok_cache_write")
                      if k in model},
            "strategy_options": cfg.strategy_options(),
            "memory": cfg.memory, "memory_by_strategy": dict(cfg.memory_by_strategy),
            "tasks": [str(t.id) for t in tasks], "gold_actions": gold,
            "train_tasks": train}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("overrides", nargs="*")
    args = parser.parse_args(argv)
    from harness.run import compose_job
    from harness.config_errors import describe

    try:
        cfg = compose_job(args.overrides)
        found = facts(cfg)
    except Exception as exc:  # a bad choice or value: one line, as `make sweep` says it
        from_config = "hydra" in type(exc).__module__ or "omegaconf" in type(exc).__module__
        print(f"memdeliv plan: {describe(exc) if from_config else exc}", file=sys.stderr)
        return 2
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(found, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
