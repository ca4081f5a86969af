"""SIGKILL mid-sweep, rerun the same RUN: every task x trial exactly once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter

from conftest import REPO, SAMPLE_MEMORY, read_records, run_in_process

ARGS = ["model=oracle", "strategy=none,full", "benchmark.limit=6", "benchmark.trials=2", "concurrency=2",
        f"memory={SAMPLE_MEMORY}", "run_name=killed", "+model.kwargs.metadata.latency_s=0.03"]


def test_sigkill_then_resume_records_each_task_trial_once(runs_dir):
    cmd = [sys.executable, "-m", "harness.run", "-m", f"runs_dir={runs_dir}", "progress=false", *ARGS]
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    results = runs_dir / "killed" / "results.jsonl"
    deadline = time.time() + 240
    while time.time() < deadline and (not results.exists() or results.read_text().count("\n") < 4):
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    before = read_records(runs_dir / "killed")
    assert 4 <= len(before) < 24, "the kill must land mid-sweep"
    with open(results, "ab") as fh:  # and a torn line, as a kill inside write() leaves it
        fh.write(b'{"schema": 1, "job": "tau2_retail/test/memdeliv-scripted/oracle/none", "task_id": "9", "tr')

    rerun = run_in_process(*ARGS, runs_dir=runs_dir, multirun=True)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    records = read_records(runs_dir / "killed")
    keys = Counter((r["job"], r["task_id"], r["trial"]) for r in records)
    assert len(keys) == 24 and set(keys.values()) == {1}
    assert [r for r in records[: len(before)]] == before  # nothing recorded before the kill was rewritten
    assert "resumed past" in rerun.stdout
