"""Every online learner's streams are committed with the run (harness/runner/stream_state.py): killed after k
episodes (or between an update's commit and its row) and rerun, a job delivers after the resume exactly what an
uninterrupted run with the same seed delivers."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import HUNG_S, REPO, read_records
from harness.run import compose_job
from harness.runner import run_job
from harness.scripted.ace_roles import MODEL as ACE_ROLES

JOB = REPO / "tests" / "online_learner_job.py"
BASE = ["model=oracle", "benchmark.limit=4", "concurrency=1"]
LEARNERS = {"reasoning_bank": ["strategy=reasoning_bank"], "dynamic_cheatsheet": ["strategy=dynamic_cheatsheet"],
            "retrieval_synthesis": ["strategy=dynamic_cheatsheet", "strategy.options.variant=retrieval_synthesis"],
            "awm_online": ["strategy=awm_online"]}


def deliveries(run_dir):
    """Per episode: the ids delivered and the memory tokens at each step."""
    return {(r["task_id"], r["trial"]): (r["delivered"], [s["memory_tokens"] for s in r["step_usage"]])
            for r in read_records(run_dir)}


ACE = ["strategy=ace_online", f"strategy.options.reflector_model={ACE_ROLES}",
       f"strategy.options.curator_model={ACE_ROLES}", "strategy.options.dedup_threshold=null"]
# ace_online commits its playbook in its own files (docs/store.md): killed between an update and its row, its re-run
# episode sees the updated playbook, so only a kill between episodes resumes to an uninterrupted run's deliveries
CASES = [*[(learner, where) for learner in LEARNERS for where in ("row", "commit")], ("ace_online", "row")]


@pytest.mark.parametrize("learner,where", CASES)
def test_a_killed_learner_resumes_every_stream_where_it_stopped(runs_dir, learner, where):
    overrides = [*BASE, *LEARNERS.get(learner, ACE)]
    run_job(compose_job([*overrides, "progress=false", f"runs_dir={runs_dir}", "run_name=whole"]))
    killed = subprocess.run([sys.executable, str(JOB), str(runs_dir), "cut", where, "2", *overrides], cwd=REPO / "tests",
                            capture_output=True, text=True, timeout=HUNG_S,
                            env={**__import__("os").environ, "PYTHONPATH": str(REPO)})
    assert killed.returncode == 9, killed.stderr[-2000:]
    assert len(read_records(runs_dir / "cut")) == (2 if where == "row" else 1)
    if learner in LEARNERS:
        state = json.loads(next((runs_dir / "cut" / "streams").glob("*/trial_0.json")).read_text())
        assert len(state["applied"]) == 2  # two updates committed, whatever the rows say

    run_job(compose_job([*overrides, "progress=false", f"runs_dir={runs_dir}", "run_name=cut"]))
    whole, cut = deliveries(runs_dir / "whole"), deliveries(runs_dir / "cut")
    assert len(cut) == 4 and cut == whole
    assert len({json.dumps(d) for d in whole.values()}) > 1  # the memory grew: the check could fail


def test_the_job_strategys_learn_updates_the_episodes_own_stream():
    # the harness calls the job's strategy for every trial's episode; each trial's stream learns only its own
    from strategies import TaskView, Trajectory
    from strategies.dynamic_cheatsheet import DynamicCheatsheet
    from memory_kit.role_llm import RoleLLM

    def curator(**kwargs):
        return {"choices": [{"message": {"content": "<cheatsheet>\n- [dc-1] learned (count: 1)\n</cheatsheet>"}}]}

    dc = DynamicCheatsheet(llm=RoleLLM("scripted/x", completion=curator))
    episode = Trajectory(TaskView("tau2_retail", "5", "Refund order 7"), (), None, None, episode="5#1")
    dc.learn(episode)
    assert dc.state.snapshot(1) == {"cheatsheet": "- [dc-1] learned (count: 1)"}
    assert dc.state.snapshot(0) == {"cheatsheet": "(empty)"}
