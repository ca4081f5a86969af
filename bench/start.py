"""The time from the shell to the table of the smallest sweep, a process start: this checkout beside a baseline.

    .venv/bin/python bench/start.py                      # baseline ca2c702 (main before issue 49), 5 rounds
    .venv/bin/python bench/start.py --baseline REV --rounds N

Each round times `make -o setup sweep MODEL=oracle STRATEGIES=none LIMIT=1 RUN=<new>` in the baseline's tree (a
detached git worktree of REV, this checkout's .venv, .venv-appworld and .cache linked in) and in this working
tree, one after the other, so a drift of the machine's load reaches both; it prints each side's median and best
wall seconds and the ratio. `-o setup`: make takes the environment as set up (a worktree's new file times would
otherwise send make to rebuild it), on both sides alike. The runs it makes are removed.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BEFORE = "ca2c702"  # main when issue 49 was filed: the figure "today's" refers to
COMMAND = ["make", "-s", "-o", "setup", "sweep", "MODEL=oracle", "STRATEGIES=none", "LIMIT=1"]
LINKED = (".venv", ".venv-appworld", ".cache")


def timed(tree: Path, run: str) -> float:
    """Wall seconds of the sweep and its table in `tree`; its run directory removed afterwards."""
    started = time.perf_counter()
    proc = subprocess.run([*COMMAND, f"RUN={run}"], cwd=tree, capture_output=True, text=True)
    wall = time.perf_counter() - started
    shutil.rmtree(tree / "runs" / run, ignore_errors=True)
    if proc.returncode != 0 or f"run directory: runs/{run}" not in proc.stdout:  # the last line under the table
        sys.exit(f"start: {tree}: exit {proc.returncode}, no table:\n{(proc.stdout + proc.stderr)[-2000:]}")
    return wall


def worktree(rev: str, into: Path) -> Path:
    subprocess.run(["git", "worktree", "add", "--detach", "--quiet", str(into), rev], cwd=REPO, check=True)
    for name in LINKED:
        if (REPO / name).exists():
            (into / name).symlink_to(REPO / name)
    return into


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", default=BEFORE, help=f"git revision to compare with (default {BEFORE})")
    parser.add_argument("--rounds", type=int, default=5, help="timings per side (default 5)")
    args = parser.parse_args()
    base = worktree(args.baseline, Path(tempfile.mkdtemp(prefix="memdeliv-start-")) / "base")
    walls: dict[str, list[float]] = {"baseline": [], "this checkout": []}
    one, five, _ = os.getloadavg()
    try:
        timed(base, "bench-start-warm")  # the first start reads every file from disk: not counted, either side
        timed(REPO, "bench-start-warm")
        for i in range(args.rounds):
            walls["baseline"].append(timed(base, f"bench-start-{i}"))
            walls["this checkout"].append(timed(REPO, f"bench-start-{i}"))
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(base)], cwd=REPO, check=False)
    print(f"{' '.join(COMMAND)}: shell to table, {args.rounds} rounds; load before {one:.1f}/{five:.1f} (1/5 min), "
          f"after {os.getloadavg()[0]:.1f}, {os.cpu_count()} CPUs")
    for side, label in (("baseline", args.baseline), ("this checkout", "working tree")):
        median, best = statistics.median(walls[side]), min(walls[side])
        print(f"  {side:<14} {label:<13} median {median:5.2f} s, best {best:5.2f} s")
    ratio = statistics.median(walls["this checkout"]) / statistics.median(walls["baseline"])
    print(f"  ratio this / baseline (medians): {ratio:.2f}  (below 1: faster)")


if __name__ == "__main__":
    main()
