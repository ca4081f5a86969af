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

import json
import os
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from harness.memory.build import TRAIN, load_trajectories
from harness.memory.design_llm import design_llm, priced_usage
from harness.memory.design_main import builder_main
from harness.store import now_iso
from memory_kit.memory_file import save_memory
from strategies.reasoning_bank.strategy import JUDGES, KIND, BankOptions, distil
from memory_kit.role_llm import SCRIPTED_DESIGNS


def build(run_dir: Path, out: Path, model: str | None = None, judge: str = "self") -> dict[str, Any]:
    trajectories, config, notes = load_trajectories(run_dir)
    llm = design_llm(config, model)
    name = llm.model
    opts = BankOptions(judge=judge)
    items, judged = [], 0
    for key, trajectory in trajectories:
        success, found = distil(trajectory, key, llm, opts)
        judged += success
        items += found
    usage = priced_usage(llm)
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


def said(summary: dict[str, Any]) -> str:
    return (f"memdeliv: {summary['trajectories']} train episodes ({summary['judged_success']} judged successful) -> "
            f"{summary['items']} memory items -> {summary['artifact']}  (REASONING_BANK={summary['artifact']})")


def main(argv: list[str] | None = None) -> int:
    return builder_main(argv, prog="python -m harness.memory.reasoning_bank", doc=__doc__, design="reasoning_bank",
                        default_out=Path("reasoning_bank") / "bank.jsonl",
                        model_help="LiteLLM model for the judge and the extractor (default: the run's)",
                        extra=lambda parser: parser.add_argument("--judge", choices=JUDGES, default="self",
                                                                 help="self: the model's verdict (reference)"),
                        build=lambda run_dir, out, args: said(build(run_dir, out, args.model, args.judge)))


if __name__ == "__main__":
    raise SystemExit(main())
