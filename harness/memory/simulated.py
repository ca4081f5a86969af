"""`python -m harness.memory.simulated` (`make simulated-memory`): the SIMULATED world's memory artifact.

Guidelines are made from the train split's gold actions (no model, no test task is learned from), in the
ordinary artifact format with support counts and source tasks, so every strategy delivers them as it would
learned ones. What the simulated agent needs beyond that is planted in `_meta.simulated.helps`:

* one *core* guideline per write tool used by >= 3 train tasks (support = those tasks); it helps every
  evaluation task whose gold actions use that tool;
* one guideline per train task (support 1, or 2 for a share of them), keyed for retrieval by the task's
  request; it helps the evaluation tasks whose set of write tools is the same as its source task's
  (tasks without a write are helped by nothing).

So `full` delivers every helpful guideline and many unhelpful ones, and core_retrieval the core plus the
guidelines of the most similar train requests. The artifact is deterministic for a benchmark.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from omegaconf import OmegaConf

from harness import benchmarks
from harness.config import CONFIG_DIR, section_settings
from harness.scripted.simulated_world import LABEL
from harness.settings import BenchmarkSettings
from memory_kit.memory_file import learned_from
from strategies import Guideline
from memory_kit.memory_file import save_memory

if TYPE_CHECKING:
    from harness.benchmarks.tau2.adapter import Tau2Benchmark

DEFAULT_OUT = "runs/memory/simulated/memory.jsonl"
CORE_SUPPORT = 3


def _bench(name: str, split: str) -> Tau2Benchmark:
    path = Path(CONFIG_DIR) / "benchmark" / f"{name}.yaml"
    if not path.is_file():
        raise ValueError(f"unknown benchmark {name!r} (no {path})")
    cfg = section_settings(BenchmarkSettings, OmegaConf.merge(OmegaConf.load(path), {"split": split}))
    if not cfg.name.startswith("tau2_"):
        raise ValueError(f"the simulated world plays τ² only, not {cfg.name}")
    bench = cast("Tau2Benchmark", benchmarks.create(cfg))  # a tau2_* name: the τ² adapter
    bench.validate()
    return bench


def _facts(bench: Tau2Benchmark) -> dict[str, dict[str, Any]]:
    """task id -> {request, calls (tool names in order), writes (set of write tools)} from the gold script."""
    out = {}
    for task in bench.tasks():
        script = bench.oracle_script(task)
        calls = script["gold_calls"]
        # the request as the simulated user states it (its reason for calling), not the oracle's bare opening,
        # so retrieval keyed on the user's first message has something to match
        instr = getattr(task.user_scenario, "instructions", None)
        request = str(getattr(instr, "reason_for_call", None) or "").strip() or script["opening"]
        out[str(task.id)] = {"request": request, "calls": [c["name"] for c in calls],
                             "writes": frozenset(c["name"] for c in calls if c["write"])}
    return out


def _words(name: str) -> str:
    return name.replace("_", " ")


def _support(task_id: str) -> int:
    """1 or 2, fixed per task: a spread of low supports, as extraction would give."""
    return 2 if hashlib.sha256(task_id.encode()).digest()[0] < 64 else 1


def build(benchmark: str = "tau2_retail", eval_split: str = "test") -> tuple[list[Guideline], dict[str, Any]]:
    train_bench = _bench(benchmark, "train")
    train, target = _facts(train_bench), _facts(_bench(benchmark, eval_split))
    guidelines: list[Guideline] = []
    helps: dict[str, list[str]] = {}
    users: dict[str, list[str]] = defaultdict(list)
    for tid, f in train.items():
        for tool in sorted(f["writes"]):
            users[tool].append(tid)
    for tool, tids in sorted(users.items()):
        if len(tids) < CORE_SUPPORT:
            continue
        gid = f"sim-core-{tool}"
        guidelines.append(Guideline(
            id=gid, category="strategy", support=len(tids), source_task_ids=tuple(tids),
            text=f"Before you {_words(tool)}, read back every id and value it will change and get the user's "
                 f"explicit yes; never guess an item or payment id.",
            rationale=f"{LABEL} world: planted core guideline for {tool}", trigger=f"about to call {tool}",
            source_task_text=train[tids[0]]["request"]))
        helps[gid] = sorted(t for t, f in target.items() if tool in f["writes"])
    for tid, f in train.items():
        gid = f"sim-task-{tid}"
        steps = " -> ".join(dict.fromkeys(_words(c) for c in f["calls"])) or "answer from the policy"
        request = " ".join(f["request"].split()[:14])
        guidelines.append(Guideline(
            id=gid, category="strategy", support=_support(tid), source_task_ids=(tid,),
            text=f"For a request like \"{request} ...\" (train task {tid}), the order that worked: {steps}.",
            rationale=f"{LABEL} world: planted per-task guideline", trigger="a similar request",
            source_task_text=f["request"]))
        helps[gid] = sorted(t for t, g in target.items() if f["writes"] and g["writes"] == f["writes"])
    meta = {"kind": "simulated", "benchmark": benchmark, "split": "train",
            "note": f"{LABEL} WORLD: guidelines generated from train gold actions with planted relevance "
                    f"(_meta.simulated.helps), for harness/scripted/simulated.py; NOT learned by a model",
            "simulated": {"eval_split": eval_split, "tasks": list(target), "helps": helps},
            # made from the train tasks' gold actions: ground truth, no model
            "learned_from": learned_from(benchmark, "train", train, None, True, train_bench.task_set)}
    return guidelines, meta


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.memory.simulated", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--benchmark", default="tau2_retail")
    parser.add_argument("--eval-split", default="test", help="the split whose tasks the guidelines help")
    parser.add_argument("--out", default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    try:
        guidelines, meta = build(args.benchmark, args.eval_split)
    except ValueError as exc:
        print(f"memdeliv: simulated_memory: {exc}", file=sys.stderr)
        return 2
    save_memory(args.out, guidelines, meta)
    helpful = sum(bool(v) for v in meta["simulated"]["helps"].values())
    print(f"memdeliv: {LABEL} world: {len(guidelines)} guidelines ({helpful} help some {args.eval_split} task) "
          f"-> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
