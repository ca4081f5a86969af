"""`python -m harness.memory.experiences --name NAME [options] -- RUN OVERRIDES` (`make experiences`): the
experiences artifact of `exp_rag` and `long_context` (memory_kit/experiences.py).

1. collect: the agent with strategy `none` on the TRAIN split, as `make memory` does (harness/memory/build.py's
   collection, the same run directory runs/memory/NAME, resumable; `--no-collect` uses the stored run);
2. condense: each stored episode to one line (its task, the agent's tool calls, its last reply), no model call,
   so the build costs only the collection run; with its outcome (success / failure: the train label, as
   Evo-Memory's experience feedback) unless `--no-outcome`;
3. write runs/memory/NAME/experiences.jsonl (`_meta.kind: experiences`, `_meta.learned_from`: the train tasks).

A split other than train is refused on the command line and again on every stored record (build.py's checks).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from foundation.terminal import wrap
from harness.memory.build import TRAIN, BuildError, collect, load_trajectories, split_argv
from harness.store import now_iso
from memory_kit.memory_file import save_memory
from memory_kit.experiences import DEFAULT_MAX_CHARS, KIND, experience


def build(run_dir: Path, out: Path, with_outcome: bool = True, max_chars: int = DEFAULT_MAX_CHARS
          ) -> dict[str, Any]:
    trajectories, config, notes = load_trajectories(run_dir)
    items = [experience(key, traj, with_outcome, max_chars) for key, traj in trajectories]
    meta = {"kind": KIND, "note": "train episodes of a `none` run, condensed one per line (no model call)",
            "benchmark": config["benchmark"]["name"], "split": TRAIN, "agent_model": config["model"]["name"],
            "outcome": with_outcome, "max_chars": max_chars, "source_run": str(run_dir),
            # the outcome is the train episode's label: ground truth, allowed on train only
            "learned_from": {**config["learned_from"], "ground_truth": with_outcome}, "created": now_iso()}
    save_memory(out, items, meta)
    return {"artifact": str(out), "experiences": len(items), "notes": notes,
            "successes": sum(g.rationale == "success" for g in items)}


def main(argv: list[str] | None = None) -> int:
    ours, overrides = split_argv(argv)
    parser = argparse.ArgumentParser(prog="python -m harness.memory.experiences", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--name", required=True, help="collection run = runs/memory/NAME")
    parser.add_argument("--no-outcome", action="store_true", help="leave each episode's success label out")
    parser.add_argument("--max-chars", type=int, default=DEFAULT_MAX_CHARS, help="characters per episode")
    parser.add_argument("--no-collect", action="store_true", help="use the stored run as it is")
    parser.add_argument("--runs-dir", default="runs")
    parser.add_argument("--out", help="artifact path (default runs/memory/NAME/experiences.jsonl)")
    args = parser.parse_args(ours)
    run_dir = Path(args.runs_dir) / "memory" / args.name
    try:
        if args.max_chars < 80:
            raise BuildError(f"--max-chars must be >= 80, got {args.max_chars}")
        if not args.no_collect:
            collect(args.name, overrides, args.runs_dir)
        summary = build(run_dir, Path(args.out) if args.out else run_dir / "experiences.jsonl",
                        not args.no_outcome, args.max_chars)
    except BuildError as exc:
        print(f"memdeliv: experiences: {exc}", file=sys.stderr)
        return 2
    for note in summary["notes"]:
        print(f"memdeliv: {note}", file=sys.stderr)
    print(wrap(f"memdeliv: {summary['experiences']} train episodes condensed ({summary['successes']} successes) -> "
               f"{summary['artifact']}  (use it with EXPERIENCES={summary['artifact']})"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
