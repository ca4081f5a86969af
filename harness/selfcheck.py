"""`make selfcheck`: the scripted oracle through the *same* CLI and runner as a real sweep.

Every retail-test and airline-test task must get reward 1.0 from tau2's own evaluator; otherwise the
adapter, the orchestrator wiring or the evaluator call is broken. Prints exactly one summary line,
then one for AppWorld: where its data exists, the oracle runs every dev task's shipped gold solution
and AppWorld's own evaluator must pass it ("appworld: no data" otherwise, which is not a failure).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime
from pathlib import Path

BENCHES = ("tau2_retail", "tau2_airline")
APPWORLD_SPLIT = "dev"  # ships gold solutions, like train, and is the smaller of the two


def appworld_line(run: str) -> tuple[str, list[str]]:
    """The AppWorld summary line and its failures (none when there is no data to check)."""
    from harness.benchmarks.appworld.adapter import data_root, has_data

    if not (has_data(data_root()) or os.environ.get("APPWORLD_DATA_BUNDLE")):
        return "selfcheck: appworld: no data", []
    cmd = [sys.executable, "-m", "harness.run", "model=oracle", "strategy=none", "benchmark=appworld",
           f"benchmark.split={APPWORLD_SPLIT}", f"run_name={run}", "progress=false"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        return f"selfcheck: appworld: runner exited {proc.returncode}", [proc.stderr[-4000:]]
    records = [json.loads(line) for line in (Path("runs") / run / "results.jsonl").read_text().splitlines() if line]
    good = [r for r in records if r["success"] and r["error"] is None]
    failures = [f"appworld:{r['task_id']} pass={r['pass_count']}/{r['num_tests']} error={r['error']} "
                f"{r.get('error_detail') or ''}" for r in records if r not in good]
    return f"selfcheck: appworld_{APPWORLD_SPLIT} {len(good)}/{len(records)}", failures


def main() -> int:
    run = f"selfcheck-{datetime.now().strftime('%Y%m%d-%H%M%S')}"
    cmd = [sys.executable, "-m", "harness.run", "-m", "model=oracle", "strategy=none",
           f"benchmark={','.join(BENCHES)}", "benchmark.split=test", f"run_name={run}", "progress=false"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        print(proc.stdout[-4000:], proc.stderr[-4000:], sep="\n", file=sys.stderr)
        print(f"selfcheck: runner exited {proc.returncode}")
        return 1
    records = [json.loads(line) for line in (Path("runs") / run / "results.jsonl").read_text().splitlines() if line]
    parts, failures = [], []
    for bench in BENCHES:
        mine = [r for r in records if r["benchmark"] == bench]
        good = [r for r in mine if r["reward"] == 1.0 and r["error"] is None]
        parts.append(f"{bench} {len(good)}/{len(mine)}")
        failures += [f"{bench}:{r['task_id']} reward={r['reward']} error={r['error']} {r.get('error_detail') or ''}"
                     for r in mine if r not in good]
    print("selfcheck: " + " ".join(parts))
    line, appworld_failures = appworld_line(f"{run}-appworld")
    print(line)
    failures += appworld_failures
    for line in failures:
        print(f"  FAILED {line}", file=sys.stderr)
    return 1 if failures or not records else 0


if __name__ == "__main__":
    raise SystemExit(main())
