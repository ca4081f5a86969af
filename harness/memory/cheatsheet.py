"""`python -m harness.memory.cheatsheet --name NAME [options] -- RUN OVERRIDES` (`make cheatsheet`): the train
artifact strategy `dynamic_cheatsheet` can start from (strategies/dynamic_cheatsheet/strategy.py, artifact.py).

1. collect: the agent with strategy `none` on the TRAIN split (harness/memory/build.py's collection, the run
   runs/memory/NAME, resumable; `--no-collect` uses the stored run);
2. curate, in task order, each stored episode exactly as an online stream does, with the strategy's own code:
   the cumulative curator after each episode, and the retrieval_synthesis curator before it (the stream's past
   episodes retrieved) with the episode kept after; the model's own judgement, no label: two curator calls an
   episode, one per variant;
3. write runs/memory/NAME/dynamic_cheatsheet/cheatsheet.jsonl (`_meta.kind: dc_cheatsheet`: each variant's last
   cheatsheet and the train episodes as (task, what the agent did) pairs, `learned_from`: the train tasks) and
   build.json beside it (the calls' tokens and USD: the build cost).

The model is the run's (a scripted or simulated run: the SCRIPTED designs model), or `--model`.
"""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from harness.memory.build import TRAIN, load_trajectories
from harness.memory.design_llm import design_llm, priced_usage
from harness.memory.design_main import builder_main
from harness.store import now_iso
from strategies import StepView
from memory_kit.memory_file import save_memory
from strategies.dynamic_cheatsheet.artifact import KIND, artifact_rows
from strategies.dynamic_cheatsheet.retrieval_synthesis import RetrievalSynthesisCheatsheet
from strategies.dynamic_cheatsheet import DynamicCheatsheet
from memory_kit.role_llm import SCRIPTED_DESIGNS


def build(run_dir: Path, out: Path, model: str | None = None) -> dict[str, Any]:
    trajectories, config, notes = load_trajectories(run_dir)
    llm = design_llm(config, model)
    cumulative = DynamicCheatsheet(llm=llm)
    synthesis = RetrievalSynthesisCheatsheet(options={"variant": "retrieval_synthesis"}, llm=llm)
    for key, trajectory in trajectories:  # one stream through every episode (a task run twice: two keys)
        episode = replace(trajectory, episode=None, task=replace(trajectory.task, task_id=key))
        cumulative.learn(episode)
        synthesis.deliver(episode.task, StepView(index=0, messages=episode.messages))  # its curator, before it
        synthesis.learn(episode)
    kept = synthesis.state_data()
    pairs = [(t.task.task_id, task, done) for (_, t), task, done in zip(trajectories, kept["inputs"], kept["outputs"])]
    sheets = {"cumulative": cumulative.cheatsheet, "retrieval_synthesis": synthesis.cheatsheet}
    meta = {"kind": KIND, "note": ("cheatsheets written by the SCRIPTED designs model from templates: a pipeline "
                                   "demo, NOT learned") if llm.model == SCRIPTED_DESIGNS else
            "each variant's curator over the train episodes in order, judged by the model itself",
            "benchmark": config["benchmark"]["name"], "split": TRAIN, "agent_model": config["model"]["name"],
            "extractor": llm.model, "source_run": str(run_dir),
            "learned_from": {**config["learned_from"], "ground_truth": False, "extractor": llm.model},
            "created": now_iso()}
    save_memory(out, artifact_rows(sheets, pairs), meta)
    summary = {"artifact": str(out), "trajectories": len(trajectories), "lost_updates": len(kept["lost"]),
               "cheatsheet_lines": {k: len(v.splitlines()) for k, v in sheets.items()},
               "extractor_usage": priced_usage(llm), "notes": notes}
    (out.parent / "build.json").write_text(json.dumps({**meta, **summary}, indent=2), encoding="utf-8")
    return summary


def said(summary: dict[str, Any]) -> str:
    counts = summary["cheatsheet_lines"].items()
    lines = ", ".join(f"{variant} {n} line{'' if n == 1 else 's'}" for variant, n in counts)
    return (f"memdeliv: {summary['trajectories']} train episodes -> cheatsheets ({lines}) -> {summary['artifact']}  "
            f"(CHEATSHEET={summary['artifact']})")


def main(argv: list[str] | None = None) -> int:
    return builder_main(argv, prog="python -m harness.memory.cheatsheet", doc=__doc__, design="dynamic_cheatsheet",
                        default_out=Path("dynamic_cheatsheet") / "cheatsheet.jsonl",
                        build=lambda run_dir, out, args: said(build(run_dir, out, args.model)))


if __name__ == "__main__":
    raise SystemExit(main())
