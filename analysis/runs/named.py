"""A command given no run (make's RUNS= and RUN= both left out): it asks for one, naming the latest run here,
rather than reading a directory the user never made."""

from __future__ import annotations

from pathlib import Path

from analysis import fmt
from harness.row import RESULTS  # the row's file name (a plain definition)

RUNS_ROOT = Path("runs")


def latest_run(root: Path = RUNS_ROOT) -> Path | None:
    """The run directory under `root` whose results.jsonl changed last (memory builds' runs included), or None."""
    found = [(p.stat().st_mtime, p.parent) for p in root.glob(f"*/{RESULTS}")] if root.is_dir() else []
    return max(found)[1] if found else None


def runs_named(command: str, runs: list[str], root: Path = RUNS_ROOT) -> bool:
    """True when `runs` names at least one run; else False after asking for one on stderr (the command exits 2)."""
    if runs:
        return True
    latest = latest_run(root)
    where = f"the latest here is RUNS={latest}" if latest else f"{root}/ holds none yet: `make sweep` makes one"
    fmt.refuse(command, f"which run? name it with RUNS=runs/<run> (several: RUNS=\"runs/a runs/b\"); {where}")
    return False
