"""From `git clone` to the README's first simulated table, timed step by step (docs/performance.md has figures).

    python bench/first_table.py                    # this checkout: the simulated world's artifact, the sim-strong
                                                   # sweep at 2 trials (240 episodes, issue 30's figure) and its
                                                   # table, in a temp dir
    python bench/first_table.py --baseline REV     # the same sweep with the code of git revision REV beside it:
                                                   # both timings, and the records compared field by field
    python bench/first_table.py --clone DIR        # git clone of this checkout into DIR, `make setup` with an
                                                   # empty pip cache, then the README's commands as written (the
                                                   # newcomer's path: its sim-strong sweep has 4 trials, 480
                                                   # episodes); --overlay [PATH...]: with this working
                                                   # tree's changes (only those paths when given)

Targets (issue 30): the sweep <= 1.5 min and the whole path <= 15 min, on 2 idle cores. Each step prints its
wall time, the CPU time of its processes and the load average before and after: on a shared machine a figure is
only as good as the machine is idle. Nothing is written into the checkout's runs/.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness.row import RESULTS, read_rows

REPO = Path(__file__).resolve().parent.parent
SWEEP = ["model=simulated", "strategy=none,core_retrieval,full", "benchmark=tau2_retail", "benchmark.split=test",
         "benchmark.limit=40", "benchmark.trials=2", "progress=false"]  # the README's sweep at 2 trials
README_STEPS = [["make", "simulated-memory"],
                ["make", "sweep", "MODEL=simulated", "STRATEGIES=none,core_retrieval,full", "LIMIT=40", "TRIALS=4",
                 "RUN=sim-strong"]]  # README.md, "A first sweep in three steps"
TIMINGS = {"wall_s", "model_seconds", "latency_s", "started_at", "run"}  # what may differ between two runs


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load {one:.1f}/{five:.1f} (1/5 min, {os.cpu_count()} CPUs)"


def step(name: str, cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> float:
    """Run `cmd`; print its wall and CPU seconds and the load around it; its wall seconds."""
    before, cpu0, started = load(), _children_cpu(), time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env={**os.environ, **(env or {})}, capture_output=True, text=True)
    wall, cpu = time.perf_counter() - started, _children_cpu() - cpu0
    if proc.returncode != 0:
        sys.exit(f"first_table: {name} failed (exit {proc.returncode}): {proc.stderr[-2000:]}")
    print(f"{name}: {wall:.1f} s wall, {cpu:.1f} s CPU; {before} -> {load()}", flush=True)
    return wall


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def in_checkout(code: Path, out: Path, label: str) -> tuple[float, Path]:
    """The artifact, the sweep and its table with the code in `code`, under `out`; (sweep seconds, run dir)."""
    python = str(REPO / ".venv" / "bin" / "python")
    env = {"PYTHONPATH": str(code), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    memory = out / "memory.jsonl"
    step(f"{label} artifact", [python, "-m", "harness.memory.simulated", "--out", str(memory)], code, env)
    wall = step(f"{label} sweep (240 episodes)",
                [python, "-m", "harness.run", "-m", *SWEEP, f"model.world={memory}", f"memory={memory}",
                 f"runs_dir={out}", "run_name=sim-strong"], code, env)
    step(f"{label} table", [python, "-m", "analysis.table", str(out / "sim-strong")], code, env)
    return wall, out / "sim-strong"


def records(run: Path) -> dict[tuple, dict]:
    def strip(value):
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k not in TIMINGS}
        return [strip(v) for v in value] if isinstance(value, list) else value
    rows = (row.columns() for _, row in read_rows(run / RESULTS))  # the harness's one reader of results.jsonl
    return {(r["job"], r["task_id"], r["trial"]): strip(r) for r in rows}


def baseline_tree(rev: str, into: Path) -> Path:
    """The files of git revision `rev` (git archive), to run beside the working tree."""
    into.mkdir(parents=True)
    archive = subprocess.run(["git", "archive", rev], cwd=REPO, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def overlay(clone: Path, only: list[str]) -> None:
    """This working tree's uncommitted changes (modified, new, deleted files; `only` these when given) copied onto
    `clone`."""
    def lines(*args: str) -> list[str]:
        out = subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, check=True).stdout
        return [p for p in out.splitlines() if p]
    changed = lines("diff", "--name-only", "HEAD") + lines("ls-files", "--others", "--exclude-standard")
    for path in [p for p in changed if not only or p in only]:
        source, target = REPO / path, clone / path
        if source.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
        elif target.exists():
            target.unlink()


def clone_path(dest: Path, changes: list[str] | None) -> None:
    started = time.perf_counter()
    step("git clone", ["git", "clone", "--quiet", str(REPO), str(dest)], REPO)
    if changes is not None:
        overlay(dest, changes)
    pip_cache = Path(tempfile.mkdtemp(prefix="first-table-pip-"))  # a new machine: nothing built or downloaded yet
    try:
        step("make setup (empty pip cache)", ["make", "setup"], dest, {"PIP_CACHE_DIR": str(pip_cache)})
    finally:
        shutil.rmtree(pip_cache, ignore_errors=True)
    for cmd in README_STEPS:
        step(" ".join(cmd), cmd, dest)
    print(f"git clone to the first table: {(time.perf_counter() - started) / 60:.1f} min (target <= 15 min)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", metavar="REV", help="also run the sweep with the code of this git revision")
    parser.add_argument("--clone", type=Path, metavar="DIR", help="the newcomer's whole path in a fresh clone")
    parser.add_argument("--overlay", nargs="*", metavar="PATH",
                        help="--clone: with this working tree's changes (only these paths when given)")
    args = parser.parse_args()
    if args.clone:
        if args.clone.exists():
            parser.error(f"--clone {args.clone}: exists; give a new folder")
        clone_path(args.clone.resolve(), args.overlay)
        return
    out = Path(tempfile.mkdtemp(prefix="first-table-"))
    try:
        wall, run = in_checkout(REPO, out / "new", "this checkout:")
        if args.baseline:
            old_wall, old_run = in_checkout(baseline_tree(args.baseline, out / "old-code"), out / "old",
                                            f"{args.baseline}:")
            new, old = records(run), records(old_run)
            differ = sorted(k for k in new if new[k] != old.get(k)) + sorted(set(old) - set(new))
            fields = sorted({f for k in differ for f in {*new.get(k, {}), *old.get(k, {})}
                             if new.get(k, {}).get(f) != old.get(k, {}).get(f)})
            print(f"records: {len(new)} vs {len(old)}, {len(differ)} differ apart from timings"
                  f"{f' (fields: {fields})' if fields else ''}; sweep {old_wall:.1f} s -> {wall:.1f} s "
                  f"({old_wall / wall:.2f}x)")
        print(f"sweep: {wall:.1f} s (target <= 90 s on 2 idle cores)")
    finally:
        shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
