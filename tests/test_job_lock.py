"""One process per job: a live holder makes a second launch exit 2 having written nothing; a dead one is
taken over. (Two jobs of one sweep in parallel: tests/test_parallel_jobs.py.)"""

from __future__ import annotations

import json
import os
import socket
import subprocess

import pytest

from conftest import read_records, run_in_process
from harness.store.joblock import JobLocked, _proc_start, job_lock
from harness.store import RunStore

ARGS = ("model=oracle", "strategy=none", "benchmark.limit=2", "run_name=locked")
LOCK = "locks/tau2_retail__test__memdeliv-scripted__oracle__none.lock"


def plant_lock(runs_dir, pid: int) -> None:
    path = runs_dir / "locked" / LOCK
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"job": "j", "pid": pid, "host": socket.gethostname(), "started": "earlier",
                                "proc_start": _proc_start(pid)}))


def test_second_launch_of_a_running_job_exits_2_and_writes_nothing(runs_dir):
    holder = subprocess.Popen(["sleep", "60"])
    try:
        plant_lock(runs_dir, holder.pid)
        proc = run_in_process(*ARGS, runs_dir=runs_dir)
    finally:
        holder.kill()
        holder.wait()
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert f"already running (pid {holder.pid}" in proc.stderr and "Traceback" not in proc.stderr
    assert sorted(p.name for p in (runs_dir / "locked").iterdir()) == [".lock", "locks"]  # no records, no config


def test_a_dead_holder_is_taken_over(runs_dir):
    dead = subprocess.Popen(["true"])
    dead.wait()  # its pid is free now
    plant_lock(runs_dir, dead.pid)
    proc = run_in_process(*ARGS, runs_dir=runs_dir)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert len(read_records(runs_dir / "locked")) == 2
    assert not (runs_dir / "locked" / LOCK).exists()  # released at the end


def test_lock_is_per_job_and_released(tmp_path):
    store = RunStore(tmp_path)
    with job_lock(store, "a", "a"):
        with job_lock(store, "b", "b"):  # another job of the same run: allowed
            pass
        with pytest.raises(JobLocked, match="already running"):
            with job_lock(store, "a", "a"):
                pass
    with job_lock(store, "a", "a"):  # released: runs again
        pass
    holder = json.loads  # the file names its holder while held
    with job_lock(store, "a", "a"):
        assert holder((tmp_path / "locks" / "a.lock").read_text())["pid"] == os.getpid()
