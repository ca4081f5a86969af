"""`python -m harness.memory.workflows --name NAME [options] -- RUN OVERRIDES` (`make awm`): the workflows artifact
of strategy `awm` (Agent Workflow Memory, offline; strategies/awm/strategy.py).

1. collect: the agent with strategy `none` on the TRAIN split (harness/memory/build.py's collection, the run
   runs/memory/NAME, resumable; `--no-collect` uses the stored run);
2. induce: the train tasks' gold demonstrations (`--demonstrations gold`, the default: the reference induces from
   annotated demonstrations, mind2web/offline_induction.py), each the task as the agent saw it (the episode's
   first user message) and the benchmark's gold actions (`gold_solution`), or, with `--demonstrations successes`
   (and for a benchmark without gold solutions), the agent's own successful episodes (their train label), condensed
   one per line (memory_kit/experiences.py), go to ONE call of the model (the reference: one per website; here one
   per benchmark domain), with AWM's instruction and one-shot example, temperature 0, max_tokens 1024;
3. write runs/memory/NAME/awm/workflows.jsonl (`_meta.kind: workflows`, `learned_from`: the train tasks) and
   build.json beside it (the call's tokens and USD: the build cost).

The model is the run's (a scripted or simulated run: the SCRIPTED designs model), or `--model`.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from harness import benchmarks
from harness.config import snapshot_section
from harness.memory.build import TRAIN, BuildError, load_trajectories
from harness.memory.design_llm import design_llm, priced_usage
from harness.memory.design_main import builder_main
from harness.settings import BenchmarkSettings
from harness.store import now_iso
from strategies import Guideline, Trajectory
from memory_kit.memory_file import save_memory
from strategies.awm.strategy import INSTRUCTION, KIND, MAX_TOKENS, TEMPERATURE, induction_prompt, parse_workflows
from memory_kit.experiences import condense
from memory_kit.extraction import query_of
from memory_kit.role_llm import SCRIPTED_DESIGNS


DEMONSTRATIONS = ("gold", "successes")


def gold_demonstration(task_text: str, gold: str) -> str:
    """A gold demonstration as an induction line: the task as the agent saw it, then the agent's gold actions in
    order (a user's own actions, telecom's, are the user's: left out)."""
    steps = [line.split(": ", 1)[1] if line.startswith("assistant: ") else line.strip()
             for line in gold.splitlines() if line.strip() and not line.startswith("user: ")]
    return f"Task: {task_text} | Actions: {' -> '.join(steps) if steps else '(no actions)'}"


def gold_lines(config: dict[str, Any], trajectories: list[tuple[str, Trajectory]]) -> list[tuple[str, str]]:
    """(task id, demonstration) per collected train task with a gold solution, once per task."""
    bench = benchmarks.create(snapshot_section(BenchmarkSettings, config["benchmark"]))
    tasks = {str(t.id): t for t in bench.tasks()}
    out: dict[str, str] = {}
    for _, t in trajectories:
        task = tasks.get(str(t.task.task_id))
        gold = bench.gold_solution(task) if task is not None else None
        if gold and t.task.task_id not in out:
            out[t.task.task_id] = gold_demonstration(query_of(t), gold)
    return list(out.items())


def build(run_dir: Path, out: Path, model: str | None = None, demonstrations: str = "gold") -> dict[str, Any]:
    trajectories, config, notes = load_trajectories(run_dir)
    shown = gold_lines(config, trajectories) if demonstrations == "gold" else []
    if demonstrations == "gold" and not shown:
        notes.append("the benchmark has no gold solutions: induced from the agent's successful episodes")
    if not shown:
        demonstrations = "successes"
        shown = [(t.task.task_id, condense(t)) for _, t in trajectories if t.success]
    if not shown:
        raise BuildError(f"{run_dir}: no successful train episode to induce workflows from")
    llm = design_llm(config, model, temperature=TEMPERATURE, max_tokens=MAX_TOKENS)
    name = llm.model
    workflows = parse_workflows(llm.ask(INSTRUCTION, induction_prompt([line for _, line in shown]), "awm_induction"))
    sources = tuple(dict.fromkeys(task_id for task_id, _ in shown))
    items = [Guideline(id=f"awm-{i}", text=w, support=len(sources), source_task_ids=sources)
             for i, w in enumerate(workflows, start=1)]
    usage = priced_usage(llm)
    source = "gold demonstrations" if demonstrations == "gold" else "successful episodes"
    meta = {"kind": KIND, "note": ("workflows written by the SCRIPTED designs model from templates: a pipeline "
                                   "demo, NOT learned") if name == SCRIPTED_DESIGNS else
            f"induced from the train tasks' {source}", "benchmark": config["benchmark"]["name"], "split": TRAIN,
            "agent_model": config["model"]["name"], "extractor": name, "source_run": str(run_dir),
            # gold actions, and which episodes succeeded, are train labels: ground truth
            "learned_from": {**config["learned_from"], "ground_truth": True, "extractor": name},
            "demonstrations": demonstrations, "created": now_iso()}
    save_memory(out, items, meta)
    summary = {"artifact": str(out), "trajectories": len(trajectories), "demonstrations": demonstrations,
               "successful": sum(1 for _, t in trajectories if t.success), "shown": len(shown),
               "workflows": len(items), "extractor_usage": usage, "notes": notes}
    (out.parent / "build.json").write_text(json.dumps({**meta, **summary}, indent=2), encoding="utf-8")
    return summary


def said(summary: dict[str, Any]) -> str:
    shown = (f"{summary['shown']} gold train demonstrations" if summary["demonstrations"] == "gold" else
             f"{summary['successful']} of {summary['trajectories']} train episodes successful")
    return (f"memdeliv: {shown} -> {summary['workflows']} workflows -> {summary['artifact']}  "
            f"(AWM={summary['artifact']})")


def add_demonstrations(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--demonstrations", choices=DEMONSTRATIONS, default="gold",
                        help="gold: the train tasks' gold actions (the reference's annotated demonstrations; default); "
                             "successes: the agent's own successful train episodes")


def main(argv: list[str] | None = None) -> int:
    return builder_main(argv, prog="python -m harness.memory.workflows", doc=__doc__, design="awm",
                        default_out=Path("awm") / "workflows.jsonl", extra=add_demonstrations,
                        model_help="LiteLLM model for the induction (default: the run's)",
                        build=lambda run_dir, out, args: said(build(run_dir, out, args.model, args.demonstrations)))


if __name__ == "__main__":
    raise SystemExit(main())
