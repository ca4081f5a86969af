"""`python -m harness.memory.reasoning_bank --name NAME [options] -- RUN OVERRIDES` (`make reasoning-bank`): the
offline ReasoningBank of strategy `reasoning_bank`, learned from train (strategies/reasoning_bank/strategy.py).

1. collect: the agent with strategy `none` on the TRAIN split (harness/memory/build.py's collection, the run
   runs/memory/NAME, resumable; `--no-collect` uses the stored run);
2. distil, in task order, each stored episode as the online learner does: the judge (the model's own verdict,
   no label; `--judge ground_truth` uses the train label), then the success or failure extraction, at most 3
   items each, appended without consolidation;
3. write runs/memory/NAME/reasoning_bank/bank.jsonl (`_meta.kind: reasoning_bank`, `learned_from`: the train
   tasks) and build.json beside it (the calls' tokens and USD: the build cost analysis.runs.build_cost reads).

The model is the run's (a scripted or simulated run: the SCRIPTED designs model), or `--model`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from foundation.terminal import wrap
from harness.memory.build import TRAIN, BuildError, collect, load_trajectories, split_argv
from harness.store import now_iso
from memory_kit.memory_file import save_memory
from memory_kit.prices import price_of
from strategies.reasoning_bank.strategy import JUDGES, KIND, BankOptions, distil
from memory_kit.role_llm import SCRIPTED_DESIGNS, RoleLLM, role_model


def build(run_dir: Path, out: Path, model: str | None = None, judge: str = "self") -> dict[str, Any]:
    trajectories, config, notes = load_trajectories(run_dir)
    name = role_model(model, config["model"]["name"])
    llm = RoleLLM(name, dict(config["model"].get("kwargs") or {}) if name == config["model"]["name"] else {})
    opts = BankOptions(judge=judge)
    items, judged = [], 0
    for key, trajectory in trajectories:
        success, found = distil(trajectory, key, llm, opts)
        judged += success
        items += found
    price = price_of(name)
    usage = {**llm.usage, "cost_usd": None if price is None else price.cost(llm.usage["prompt_tokens"],
                                                                          llm.usage["completion_tokens"])}
    scripted = name == SCRIPTED_DESIGNS
    meta = {"kind": KIND, "note": ("items written by the SCRIPTED designs model from templates: a pipeline demo, "
                                   "NOT learned") if scripted else "distilled from train trajectories, judged by "
                                   "the model itself" if judge == "self" else "distilled from train trajectories",
            "benchmark": config["benchmark"]["name"], "split": TRAIN, "agent_model": config["model"]["name"],
            "extractor": name, "judge": judge, "source_run": str(run_dir),
            "learned_from": {**config["learned_from"], "ground_truth": judge == "ground_truth", "extractor": name},
            "created": now_iso()}
    save_memory(out, items, meta)
    summary = {"artifact": str(out), "trajectories": len(trajectories), "judged_success": judged,
               "items": len(items), "extractor_usage": usage, "notes": notes}
    (out.parent / "build.json").write_text(json.dumps({**meta, **summary}, indent=2), encoding="utf-8")
    return summary


def main(argv: list[str] | None = None) -> int:
    ours, overrides = split_argv(argv)
    parser = argparse.ArgumentParser(prog="python -m harness.memory.reasoning_bank", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--name", required=True, help="collection run = runs/memory/NAME")
    parser.add_argument("--model", help="LiteLLM model for the judge and the extractor (default: the run's)")
    parser.add_argument("--judge", choices=JUDGES, default="self", help="self: the model's verdict (reference)")
    parser.add_argument("--no-collect", action="store_true", help="use the stored run as it is")
    parser.add_argument("--runs-dir", default="runs")
    parser.add_argument("--out", help="artifact path (default runs/memory/NAME/reasoning_bank/bank.jsonl)")
    args = parser.parse_args(ours)
    run_dir = Path(args.runs_dir) / "memory" / args.name
    out = Path(args.out) if args.out else run_dir / "reasoning_bank" / "bank.jsonl"
    try:
        if not args.no_collect:
            collect(args.name, overrides, args.runs_dir)
        summary = build(run_dir, out, args.model, args.judge)
    except BuildError as exc:
        print(f"memdeliv: reasoning_bank: {exc}", file=sys.stderr)
        return 2
    print(wrap(f"memdeliv: {summary['trajectories']} train episodes ({summary['judged_success']} judged successful) -> "
               f"{summary['items']} memory items -> {summary['artifact']}  (REASONING_BANK={summary['artifact']})"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
