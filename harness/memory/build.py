"""`python -m harness.memory.build --name NAME [options] -- RUN OVERRIDES`: learned guideline memory.

1. collect: the agent with strategy `none` on the benchmark's TRAIN split, through the ordinary runner
   (`harness.run ... benchmark.split=train run_name=memory/NAME`; an interrupted collection resumes); or, with
   `--from-results FILE`, a tau2-bench results file imported as that run (every task in train, else exit 2);
2. extract: one LLM call per stored trajectory (converted by the benchmark adapter's `load_trajectory`); the
   extractor sees the trajectory only, unless --ground-truth adds each episode's reward and evaluator report;
3. consolidate (docs/memory-building.md), ALTK-Evolve's modes: `lossless` (default) clusters guidelines by the
   similarity of their source tasks and consolidates each cluster with one LLM call; `lossy` merges liberally
   towards `--target` guidelines (12); `none` keeps every extracted guideline; `text` (ours) merges
   near-duplicate guideline texts one by one; support = distinct source tasks in every mode;
4. write runs/memory/NAME/memory.jsonl, with memory.extracted.jsonl (every extracted guideline),
   memory.merges.jsonl (which id merged into which) and build.json (counts, extractor tokens) beside it.

Memory is never learned from test tasks: a split other than train is refused, on the command line and
again on every stored record.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections import Counter
from contextlib import ExitStack, contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any, Iterator

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import yaml
from harness import benchmarks
from harness.config import snapshot_section
from harness.serving.faults import ProviderUnusable
from harness.serving.model_client import ModelClient
from harness.settings import BenchmarkSettings, ModelSettings
from harness.serving.models import ModelConfigError, open_model
from memory_kit.memory_file import learned_from
from harness.scripted import reflector
from harness.row import latest_per_episode
from harness.store import RunStore, now_iso
from strategies import Trajectory
from memory_kit.memory_file import save_memory
from foundation.atomic import write_text_atomic
from foundation.terminal import wrap
from memory_kit.consolidation import consolidate
from memory_kit.consolidation_altk import DEFAULT_TARGET, check_mode, consolidate_altk
from memory_kit.embeddings import make_embedder
from memory_kit.extraction import extract

TRAIN = "train"
CONSOLIDATIONS = ("none", "lossless", "lossy", "text")  # the first three: ALTK-Evolve's consolidation_mode
OLD_NAMES = {"altk": "lossless"}  # what `lossless` was called before the three modes
_FORBIDDEN = ("strategy", "run_name", "memory", "runs_dir")


class BuildError(RuntimeError):
    pass


def collect_overrides(name: str, overrides: list[str]) -> list[str]:
    """The runner's overrides for the collection run; refuses anything that would leave the train split."""
    for item in overrides:
        key, _, value = item.lstrip("+").partition("=")
        if key == "benchmark.split" and value != TRAIN:
            raise BuildError(f"memory is learned from the train split only; refusing benchmark.split={value}")
        if key in _FORBIDDEN:
            raise BuildError(f"build_memory sets {key} itself; drop {item!r}")
        if item.startswith("-"):
            raise BuildError(f"unexpected flag {item!r} among the run overrides")
    return [*overrides, "strategy=none", f"benchmark.split={TRAIN}", f"run_name=memory/{name}", "memory=null"]


def collect(name: str, overrides: list[str], runs_dir: str) -> None:
    """The collection run, through harness.run's own entry in this process: a second interpreter would import
    LiteLLM, tau2 and Hydra again (seconds per build) to run the same code."""
    from harness.run import exit_status, main as run_main

    argv = [*collect_overrides(name, overrides), f"runs_dir={runs_dir}"]
    code = exit_status(run_main, argv)
    if code != 0:
        raise BuildError(f"collection run failed (exit {code}): python -m harness.run {' '.join(argv)}")


def collect_from_results(name: str, file: str, runs_dir: str) -> None:
    """--from-results: a tau2-bench results file imported as the collection run (harness/import_tau2.py, in this
    process); every task must be in the train split, else it stops (exit 2) naming the others."""
    from harness.import_tau2 import main as import_main
    from harness.run import exit_status

    code = exit_status(import_main, [file, "--run", f"memory/{name}", "--runs-dir", runs_dir, "--split", TRAIN])
    if code != 0:
        raise BuildError(f"import of {file} failed (exit {code}): nothing learned")



def load_trajectories(run_dir: Path) -> tuple[list[tuple[str, Trajectory]], dict[str, Any], list[str]]:
    """(source key, trajectory) per usable record, the job config (plus `learned_from`: every collected
    task, for the artifact's provenance), and notes on what was left out."""
    store = RunStore(run_dir)
    records = list(latest_per_episode(store.read())[0].values())  # an infra episode rerun: its last attempt
    if not records:
        raise BuildError(f"no records in {run_dir}: nothing to learn from")
    for r in records:
        # what the record says was delivered, whatever its strategy is called: no memory text, no memory tool call
        delivered = r.get("memory_tokens") or r.get("memory_tool_calls")
        if r.get("split") != TRAIN or delivered:
            raise BuildError(f"{run_dir}: record {r.get('task_id')} has split={r.get('split')} "
                             f"strategy={r.get('strategy')} memory_tokens={r.get('memory_tokens')}; "
                             "memory is learned only from train runs without memory")
    jobs = yaml.safe_load((run_dir / "config.yaml").read_text())["jobs"]
    if len(jobs) != 1:
        raise BuildError(f"{run_dir}: expected one job (one model, one benchmark), found {sorted(jobs)}")
    job = next(iter(jobs.values()))
    config = job["config"]
    bench = benchmarks.create(snapshot_section(BenchmarkSettings, config["benchmark"]))
    trials = Counter(r["task_id"] for r in records)
    imported = (job.get("identity") or {}).get("imported_from")  # a tau2 results file: its own tasks' fingerprint
    config = {**config, "learned_from": learned_from(config["benchmark"]["name"], TRAIN, trials,
                                                     config["model"]["name"], False,
                                                     records[0].get("task_set") if imported else bench.task_set,
                                                     **({"imported_from": imported} if imported else {}))}
    out, notes = [], []
    for r in sorted(records, key=lambda r: (_order(r["task_id"]), r["trial"])):
        if r.get("error") == "infra" or not r.get("trajectory"):  # other failures are lessons: kept
            why = "infra error" if r.get("error") == "infra" else f"no trajectory (error {r.get('error')})"
            notes.append(f"task {r['task_id']} trial {r['trial']}: {why}, not used")
            continue
        key = str(r["task_id"]) if trials[r["task_id"]] == 1 else f"{r['task_id']}-t{r['trial']}"
        trajectory = bench.load_trajectory(run_dir / r["trajectory"], r)
        if trajectory is None:  # BenchmarkBase's default: this adapter does not read its trajectories back
            raise BuildError(f"benchmark {bench.name!r} cannot read its trajectories back (no load_trajectory)")
        out.append((key, trajectory))
    return out, config, notes


def _order(task_id: str) -> tuple[int, Any]:
    return (0, int(task_id)) if str(task_id).isdigit() else (1, str(task_id))


@contextmanager
def extractor_llm(model_cfg: dict[str, Any], override: str | None) -> Iterator[tuple[str, Any, Counter]]:
    """The text LLM for extraction and merges: the run's model through our client (retries, usage); a run on
    a managed local model (model.gguf) gets its server for as long as the block runs."""
    cfg = snapshot_section(ModelSettings, model_cfg)
    name = override or cfg.name
    if override is None and cfg.scripted:  # the oracle replays gold actions; it cannot reflect
        name = reflector.MODEL
    with ExitStack() as stack:
        if name.startswith(reflector.PROVIDER + "/"):
            reflector.install()
            client = ModelClient(name, {}, max_retries=0)
        else:  # the run's kwargs and key variable (api_base, temperature, ...) carry over to the extractor
            if override is not None:
                cfg = replace(cfg, gguf=None)  # another model was named: no local server for it
            try:
                agent, _ = stack.enter_context(open_model(cfg)).clients()
            except ModelConfigError as exc:
                raise BuildError(str(exc)) from None
            client = ModelClient(name, agent.kwargs, max_retries=cfg.max_retries, retry_backoff_s=cfg.retry_backoff_s)
        usage: Counter[str] = Counter()
        yield name, _usage_counting(client, usage), usage


def _usage_counting(client: ModelClient, usage: Counter) -> Any:
    def llm(messages: list[dict[str, str]]) -> str:
        completion = client.complete(messages)
        usage["calls"] += 1
        usage["prompt_tokens"] += completion.usage.prompt_tokens
        usage["completion_tokens"] += completion.usage.completion_tokens
        if completion.usage.cost_usd is not None:
            usage["cost_usd"] += completion.usage.cost_usd  # type: ignore[assignment]  # USD beside the int counts
        return completion.content or ""

    return llm


def check_consolidation(consolidation: str, target: int | None) -> tuple[str, int | None]:
    """(mode, lossy target or None); bad input raises BuildError before anything is read or written."""
    mode = OLD_NAMES.get(consolidation, consolidation)
    if mode not in CONSOLIDATIONS:
        raise BuildError(f"consolidation={consolidation!r}; valid: {', '.join(CONSOLIDATIONS)}")
    if target is not None and mode != "lossy":
        raise BuildError(f"a target (--target {target}) applies to lossy consolidation only, not {mode!r}")
    if mode == "lossy":
        target = DEFAULT_TARGET if target is None else target
        try:
            check_mode(mode, target)
        except ValueError as exc:
            raise BuildError(str(exc)) from None
    return mode, target


def build(run_dir: Path, out: Path, extractor: str | None = None, embedder: str = "minilm",
          threshold: float = 0.80, ground_truth: bool = False, consolidation: str = "lossless",
          target: int | None = None) -> dict[str, Any]:
    consolidation, target = check_consolidation(consolidation, target)
    trajectories, config, notes = load_trajectories(run_dir)
    with extractor_llm(config["model"], extractor) as (name, llm, usage):
        extractions = [extract(traj, llm, source=key, ground_truth=ground_truth) for key, traj in trajectories]
        extracted = [g for x in extractions for g in x.guidelines]
        skipped = [{"source": x.source, "error": x.error} for x in extractions if x.error]
        extraction_usage = Counter(usage)  # the consolidation calls are counted apart below
        if consolidation == "text":
            result = consolidate(extracted, make_embedder(embedder), llm, threshold=threshold)
        else:  # none needs no embedder
            result = consolidate_altk(extracted, make_embedder(embedder) if consolidation != "none" else None, llm,
                                      threshold=threshold, mode=consolidation, target=target or DEFAULT_TARGET)
        consolidation_usage = {k: v - extraction_usage.get(k, 0) for k, v in usage.items()}
    scripted = name.startswith(reflector.PROVIDER + "/")
    meta = {
        "kind": "scripted-demo" if scripted else "learned",
        "note": ("guidelines written by the SCRIPTED reflector from templates: a pipeline demo, NOT learned"
                 if scripted else
                 "extracted from train-split trajectories and consolidated (support = distinct tasks)"),
        "benchmark": config["benchmark"]["name"], "split": TRAIN, "agent_model": config["model"]["name"],
        "extractor": name, "ground_truth": ground_truth, "embedder": embedder, "consolidation": consolidation,
        **({"lossy_target": target} if consolidation == "lossy" else {}),
        "merge_threshold": None if consolidation == "none" else threshold,
        "merge_threshold_on": {"none": None, "text": "guideline texts"}.get(consolidation, "source task texts"),
        "source_run": str(run_dir),
        "learned_from": {**config["learned_from"], "ground_truth": ground_truth, "extractor": name},
        "created": now_iso(),
    }
    save_memory(out, sorted(result.guidelines, key=lambda g: (-g.support, g.id)), meta)
    save_memory(_beside(out, "extracted"), extracted, {**meta, "kind": "extracted-before-consolidation"})
    _write_jsonl(_beside(out, "merges"), result.merge_rows())
    summary = {
        "artifact": str(out), "trajectories": len(trajectories), "extracted": len(extracted),
        "skipped_trajectories": skipped, "guidelines": len(result.guidelines), "merges": len(result.merges),
        "failed_merge_decisions": result.failed_decisions, "support_histogram": dict(sorted(Counter(
            g.support for g in result.guidelines).items())), "extractor_usage": dict(extraction_usage),
        "consolidation_usage": consolidation_usage, "consolidation_llm_calls": result.llm_calls, "notes": notes,
        # ALTK-Evolve's support (inputs behind each guideline) summed: equal to the inputs when nothing was lost
        "support_conserved": {"extracted": len(extracted), "attributed": sum(result.member_counts().values())},
        **({"lossy_target_met": len(result.guidelines) <= (target or DEFAULT_TARGET)} if consolidation == "lossy"
           else {}),
    }
    (out.parent / "build.json").write_text(json.dumps({**meta, **summary}, indent=2), encoding="utf-8")
    return summary


def _mode_label(consolidation: str, target: int | None) -> str:
    mode, target = check_consolidation(consolidation, target)
    return f"lossy, target {target}" if mode == "lossy" else mode


def _beside(path: Path, kind: str) -> Path:
    return path.with_name(f"{path.stem}.{kind}{path.suffix}")


def _write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    write_text_atomic(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))


def split_argv(argv: list[str] | None) -> tuple[list[str], list[str]]:
    """A builder's own arguments, and the Hydra overrides after `--` (its collection sweep's)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    return (argv[: argv.index("--")], argv[argv.index("--") + 1:]) if "--" in argv else (argv, [])


def main(argv: list[str] | None = None) -> int:
    ours, overrides = split_argv(argv)
    parser = argparse.ArgumentParser(prog="python -m harness.memory.build", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--name", required=True, help="collection run = runs/memory/NAME")
    parser.add_argument("--extractor", help="LiteLLM model for extraction and merges (default: the run's model)")
    parser.add_argument("--embedder", default="minilm", help="minilm | litellm:<model>")
    parser.add_argument("--consolidation", choices=[*CONSOLIDATIONS, *OLD_NAMES], default="lossless",
                        help="ALTK-Evolve's modes: lossless (cluster by source-task similarity, one LLM call per "
                             "cluster, only the same rule merged), lossy (merge liberally towards --target), none "
                             "(keep every guideline); text: pairwise merges of similar guideline texts (ours); "
                             "altk: the old name of lossless")
    parser.add_argument("--target", type=int, help=f"lossy only: the number of guidelines aimed at "
                        f"(default {DEFAULT_TARGET}, ALTK-Evolve's lossy_target_num_guidelines)")
    parser.add_argument("--threshold", type=float, default=0.80,
                        help="cosine similarity: of source tasks (altk) or of guideline texts (text)")
    parser.add_argument("--ground-truth", action="store_true",
                        help="show the extractor each episode's reward and evaluator report (default: trajectory only)")
    parser.add_argument("--no-collect", action="store_true", help="use the stored run as it is")
    parser.add_argument("--from-results", metavar="FILE", help="learn from a tau2-bench results file's trajectories "
                        "(imported as runs/memory/NAME; train-split tasks only) instead of collecting")
    parser.add_argument("--runs-dir", default="runs")
    parser.add_argument("--out", help="artifact path (default runs/memory/NAME/memory.jsonl)")
    args = parser.parse_args(ours)
    logging.basicConfig(level=logging.WARNING, format="memdeliv: %(message)s")
    run_dir = Path(args.runs_dir) / "memory" / args.name
    try:
        check_consolidation(args.consolidation, args.target)  # before any collection
        if args.from_results and overrides:
            raise BuildError(f"--from-results learns from the file's episodes; drop the run overrides {overrides}")
        if args.from_results:
            collect_from_results(args.name, args.from_results, args.runs_dir)
        elif not args.no_collect:
            collect(args.name, overrides, args.runs_dir)
        summary = build(run_dir, Path(args.out) if args.out else run_dir / "memory.jsonl", args.extractor,
                        args.embedder, args.threshold, args.ground_truth, args.consolidation, args.target)
    except (BuildError, ProviderUnusable) as exc:  # ProviderUnusable: a bad key or an unknown model
        print(wrap(f"memdeliv: build_memory: {exc}"), file=sys.stderr)
        return 2
    print(wrap(f"memdeliv: {summary['trajectories']} trajectories -> {summary['extracted']} guidelines extracted "
               f"({len(summary['skipped_trajectories'])} trajectories skipped) -> {summary['guidelines']} after "
               f"{summary['merges']} merges ({_mode_label(args.consolidation, args.target)} consolidation); "
               f"support histogram {summary['support_histogram']}"))
    if summary.get("lossy_target_met") is False:
        print(wrap(f"memdeliv: the model kept {summary['guidelines']} guidelines, more than the lossy target: "
                   f"nothing was cut (build.json: lossy_target_met false)"), file=sys.stderr)
    print(wrap(f"memdeliv: memory artifact: {summary['artifact']}  (use it with MEMORY={summary['artifact']})"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
