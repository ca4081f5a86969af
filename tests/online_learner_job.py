"""Subprocess body for tests/test_online_learner_resume.py: one online learner's job on the scripted oracle, killed
(os._exit, no cleanup, like kill -9) after the crash_at-th episode's row (`row`) or after the crash_at-th update's
commit, before its row (`commit`).

argv: runs_dir run_name row|commit crash_at override...
"""

from __future__ import annotations

import itertools
import os
import sys

from harness.run import compose_job
from harness.runner import run_job
from harness.runner.stream_state import StreamStates
from harness.store import RunStore

runs_dir, run_name, where, crash_at, overrides = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5:]
seen = itertools.count(1)
patched = RunStore if where == "row" else StreamStates
method = "append" if where == "row" else "commit"
original = getattr(patched, method)


def crashing(self, *args, **kwargs):
    result = original(self, *args, **kwargs)
    if next(seen) == crash_at:
        os._exit(9)
    return result


setattr(patched, method, crashing)
print(run_job(compose_job([*overrides, "progress=false", f"runs_dir={runs_dir}", f"run_name={run_name}"])))
