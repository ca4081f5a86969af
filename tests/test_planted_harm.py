"""The SIMULATED world with planted harm, through the real chain: `full` over a contradicted artifact, run by the
runner, the simulated agent and tau2's evaluator. Every episode's recorded draw is the analytic p with the harm
term (harness/scripted/simulated_world.py), its tag counts the harmful lessons the world planted for that task, and
its success is u < p — so records drawn by world.simulate_records (tests/test_harm.py, test_robustness.py) are
what a sweep over a corrupted artifact records."""

from __future__ import annotations

import pytest
from conftest import read_records
from tau2.data_model.simulation import Results

from harness.memory.corrupt import Spec, corrupt
from harness.scripted.simulated import parse_tag
from strategies import render_guidelines
from memory_kit.memory_file import load_memory
from harness.scripted import simulated_world as world

TASKS = ["5", "62", "12"]  # many planted helpers; no write at all; a gold write that fails in tau2's replay


@pytest.fixture(scope="module")
def harmed_sweep(artifact, tmp_path_factory):
    from harness.run import check_job, compose_job
    from harness.runner import run_job

    root = tmp_path_factory.mktemp("harmed")
    bad = root / "contradict_50.jsonl"
    corrupt(artifact, bad, Spec("contradict", 0.5))
    tasks = "[" + ",".join(f"'{t}'" for t in TASKS) + "]"
    cfg = compose_job(["model=simulated", f"model.world={bad}", "benchmark=tau2_retail", f"benchmark.task_ids={tasks}",
                       "benchmark.seed=11", "benchmark.trials=2", f"memory={bad}", f"runs_dir={root}",
                       "progress=false", "strategy=full", "run_name=harm"])
    check_job(cfg)
    run_job(cfg)
    return root / "harm", bad


def test_real_episodes_draw_with_the_planted_harm(harmed_sweep):
    run_dir, bad = harmed_sweep
    w, prof = world.load_world(bad), world.PROFILES["strong"]
    by_id = {g.id: g for g in load_memory(bad)[0]}
    records = read_records(run_dir)
    assert len(records) == 2 * len(TASKS)
    harmful_seen = set()
    for r in records:
        sim = Results.load(run_dir / r["trajectory"]).simulations[0]
        tags = [t for t in (parse_tag(m.content) for m in sim.messages if m.role == "assistant" and m.content) if t]
        drawn = tags[-1]
        block = render_guidelines([by_id[i] for i in r["delivered"][0]])
        assert drawn["p"] == pytest.approx(world.expected_p(prof, w, r["task_id"], block), abs=1e-6)
        delivered = world.read_lines(world.rendered_lines(block), w).delivered
        assert drawn["harmful"] == len(w.harmful_ids(r["task_id"], delivered))
        assert drawn["relevant"] == len(w.relevant_ids(r["task_id"], delivered))
        assert r["success"] == (drawn["u"] < drawn["p"])
        harmful_seen.add(drawn["harmful"])
    assert max(harmful_seen) > 0 and 0 in harmful_seen  # task 5 misled, task 62 (no write) never
    five = prof.p(len(w.relevant_ids("5", by_id)), 0, len(w.harmful_ids("5", by_id)))
    assert five < prof.p(len(w.relevant_ids("5", by_id)), 0)  # the harm term is what moved its p
