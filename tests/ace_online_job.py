"""Subprocess body for tests/test_ace_online_resume.py: one ace_online job with SCRIPTED roles (no LLM).

argv: runs_dir run_name crash_at [trials [concurrency]]. crash_at > 0: the process dies (os._exit, no cleanup, like kill -9) right
after the strategy's learn (ACE's update with reflect-and-retry) returns for the crash_at-th time, i.e. after that
episode's playbook update is saved and before its record is written (the runner updates first, then records).
"""

from __future__ import annotations

import itertools
import os
import sys

from ace_fakes import MODEL, install_scripted_roles
from harness.runner import run_job
from harness.run import compose_job
from strategies.ace.online import AceOnline

runs_dir, run_name, crash_at = sys.argv[1], sys.argv[2], int(sys.argv[3])
trials = int(sys.argv[4]) if len(sys.argv) > 4 else 1
concurrency = int(sys.argv[5]) if len(sys.argv) > 5 else 1  # > 1: the trials' streams side by side
roles = install_scripted_roles()
for i in range(10):  # every update adds one bullet, so a lost update shows as a missing bullet
    roles.queue("curator", {"operations": [{"type": "ADD", "section": "strategies",
                                            "content": f"Lesson {i} from process {os.getpid()}."}]})
calls = itertools.count(1)  # learn() runs in each stream's thread when streams run side by side
learn = AceOnline.learn


def crashing_learn(self, trajectory, *args, **kwargs):
    call = next(calls)
    result = learn(self, trajectory, *args, **kwargs)
    if call == crash_at:
        os._exit(9)
    return result


AceOnline.learn = crashing_learn
cfg = compose_job(["model=oracle", "strategy=ace_online", f"strategy.options.reflector_model={MODEL}",
                   f"strategy.options.curator_model={MODEL}", "strategy.options.dedup_threshold=null",
                   "benchmark.limit=3", f"benchmark.trials={trials}", f"concurrency={concurrency}", "progress=false",
                   f"runs_dir={runs_dir}", f"run_name={run_name}"])
print(run_job(cfg))
