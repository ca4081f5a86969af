"""One process per job: a lock file `<run>/locks/<job>.lock` holding the holder's pid, host and start time.

A second launch of a running job would write every episode twice; it is refused (exit 2) unless the holder
is dead (its pid is gone from this host, or the pid now belongs to a younger process), in which case the
new launch takes over, as after `kill -9`. Other jobs of the same sweep have their own lock, so parallel
jobs (Hydra's joblib launcher) still share the run directory. A holder on another host cannot be probed:
that is refused too, with the file to delete if the user knows it is dead.
"""

from __future__ import annotations

import json
import os
import socket
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from harness.store import RunStore, RunStoreError, now_iso
from foundation.atomic import write_text_atomic


class JobLocked(RunStoreError):
    """Another live process runs this job."""


def _proc_start(pid: int) -> str | None:
    """The kernel's start time of a process (field 22 of /proc/<pid>/stat): tells a reused pid apart."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


def _alive(holder: dict[str, Any]) -> bool:
    pid = int(holder.get("pid", -1))
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        pass
    started = holder.get("proc_start")
    return started is None or _proc_start(pid) in (None, started)


def lock_path(store: RunStore, slug: str) -> Path:
    return store.root / "locks" / f"{slug}.lock"


@contextmanager
def job_lock(store: RunStore, job_key: str, slug: str) -> Iterator[dict[str, Any] | None]:
    """Hold the job's lock for the block; yields the dead holder taken over from, if any."""
    path = lock_path(store, slug)
    me = {"job": job_key, "pid": os.getpid(), "host": socket.gethostname(), "started": now_iso(),
          "proc_start": _proc_start(os.getpid())}
    with store.locked():  # check-and-write under the run's flock: two launches cannot both win
        previous = None
        if path.exists():
            try:
                previous = json.loads(path.read_text())
            except (OSError, json.JSONDecodeError):
                previous = {}  # a torn lock file: its writer died mid-write
        if previous:
            mine = previous.get("pid") == me["pid"] and previous.get("host") == me["host"]
            if previous.get("host") != me["host"]:
                raise JobLocked(f"job {job_key!r} is held by pid {previous.get('pid')} on host "
                                f"{previous.get('host')!r} since {previous.get('started')}; it cannot be checked "
                                f"from here: if that process is gone, delete {path}")
            if mine or _alive(previous):
                raise JobLocked(f"job {job_key!r} is already running (pid {previous.get('pid')} on "
                                f"{previous.get('host')}, since {previous.get('started')}); wait for it, or use "
                                "another RUN= name")
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(path, json.dumps(me))
    try:
        yield previous or None
    finally:
        with store.locked():
            try:
                if json.loads(path.read_text()).get("pid") == me["pid"]:
                    path.unlink()
            except (OSError, json.JSONDecodeError):
                pass
