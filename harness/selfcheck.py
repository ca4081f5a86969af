"""`make selfcheck`: the scripted oracle through the *same* CLI and runner as a real sweep.

Every retail-test and airline-test task must get reward 1.0 from tau2's own evaluator; otherwise the
adapter, the orchestrator wiring or the evaluator call is broken. Prints exactly one summary line,
then one for AppWorld: where its data exists, the oracle runs every dev task's shipped gold solution
and AppWorld's own evaluator must pass it (otherwise a line saying there is no data, which is not a failure).

Its runs go to a temporary directory, removed when every check passed (so runs/, which the analysis and the
compare notebook read, never collects selfcheck runs); after a failure it is kept and its path printed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from harness.row import RESULTS, Row, read_rows

BENCHES = ("tau2_retail", "tau2_airline")
APPWORLD_SPLIT = "dev"  # ships gold solutions, like train, and is the smaller of the two


# said in the line itself: a reader of `make selfcheck` need not look up what "no data" means
NO_APPWORLD_DATA = ("selfcheck: appworld: no data, skipped (not a failure: make appworld-data downloads it, "
                    "with internet)")


def appworld_line(runs_dir: Path, run: str) -> tuple[str, list[str]]:
    """The AppWorld summary line and its failures (none when there is no data to check)."""
    from harness.benchmarks.appworld.adapter import data_root, has_data

    if not (has_data(data_root()) or os.environ.get("APPWORLD_DATA_BUNDLE")):
        return NO_APPWORLD_DATA, []
    cmd = [sys.executable, "-m", "harness.run", "model=oracle", "strategy=none", "benchmark=appworld",
           f"benchmark.split={APPWORLD_SPLIT}", f"runs_dir={runs_dir}", f"run_name={run}", "progress=false"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        return f"selfcheck: appworld: runner exited {proc.returncode}", [proc.stderr[-4000:]]
    records = rows_of(runs_dir / run)
    good = [r for r in records if r.success and r.get("error") is None]
    failures = [f"appworld:{r.task_id} pass={r.get('pass_count')}/{r.get('num_tests')} error={r.get('error')} "
                f"{r.get('error_detail') or ''}" for r in records if r not in good]
    return f"selfcheck: appworld_{APPWORLD_SPLIT} {len(good)}/{len(records)}", failures


def rows_of(run_dir: Path) -> list[Row]:
    """The run's rows, through the one reader of results.jsonl (harness/row.py)."""
    return [row for _, row in read_rows(run_dir / RESULTS)]


def main() -> int:
    runs_dir = Path(tempfile.mkdtemp(prefix="memdeliv-selfcheck-"))
    status = check(runs_dir)
    if status == 0:
        shutil.rmtree(runs_dir, ignore_errors=True)
    else:
        print(f"selfcheck: its runs are kept for inspection in {runs_dir}", file=sys.stderr)
    return status


def check(runs_dir: Path) -> int:
    run = "selfcheck"
    cmd = [sys.executable, "-m", "harness.run", "-m", "model=oracle", "strategy=none",
           f"benchmark={','.join(BENCHES)}", "benchmark.split=test", f"runs_dir={runs_dir}", f"run_name={run}",
           "progress=false"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        print(proc.stdout[-4000:], proc.stderr[-4000:], sep="\n", file=sys.stderr)
        print(f"selfcheck: runner exited {proc.returncode}")
        return 1
    records = rows_of(runs_dir / run)
    parts, failures = [], []
    for bench in BENCHES:
        mine = [r for r in records if r.get("benchmark") == bench]
        good = [r for r in mine if r.get("reward") == 1.0 and r.get("error") is None]
        parts.append(f"{bench} {len(good)}/{len(mine)}")
        failures += [f"{bench}:{r.task_id} reward={r.get('reward')} error={r.get('error')} "
                     f"{r.get('error_detail') or ''}" for r in mine if r not in good]
    print("selfcheck: " + " ".join(parts))
    line, appworld_failures = appworld_line(runs_dir, f"{run}-appworld")
    print(line)
    failures += appworld_failures
    for line in failures:
        print(f"  FAILED {line}", file=sys.stderr)
    return 1 if failures or not records else 0


if __name__ == "__main__":
    raise SystemExit(main())
