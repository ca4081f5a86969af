"""A real oracle sweep through the CLI: 2 strategies x 5 tasks x 2 trials, and Pass^k against tau2's own."""

from __future__ import annotations

from collections import Counter

import pytest
from tau2.data_model.simulation import Results
from tau2.metrics.agent_metrics import compute_metrics

from analysis import load_records, pass_hat_ks
from analysis.statistics.metrics import valid
from conftest import SAMPLE_MEMORY, read_records, run_in_process
from memory_kit.memory_file import load_memory

SAMPLE_IDS = [g.id for g in load_memory(SAMPLE_MEMORY)[0]]


@pytest.fixture(scope="module")
def sabotaged_sweep(tmp_path_factory):
    runs_dir = tmp_path_factory.mktemp("sweep") / "runs"
    proc = run_in_process("model=oracle", "strategy=none,full", "benchmark=tau2_retail", "benchmark.limit=5",
                          "benchmark.trials=2", f"memory={SAMPLE_MEMORY}", "run_name=passk",
                          # scripted failures on a deterministic share of task x trial, so Pass^k is not trivially 1
                          "+model.kwargs.metadata.sabotage_rate=0.35", runs_dir=runs_dir, multirun=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return runs_dir / "passk"


def tau2_results(run_dir, records) -> Results:
    loaded = [Results.load(run_dir / r["trajectory"]) for r in records]
    tasks = {t.id: t for res in loaded for t in res.tasks}
    return Results(info=loaded[0].info, tasks=list(tasks.values()),
                   simulations=[s for res in loaded for s in res.simulations])


def test_sweep_writes_one_record_per_strategy_task_trial(sabotaged_sweep):
    records = read_records(sabotaged_sweep)
    keys = Counter((r["strategy"], r["task_id"], r["trial"]) for r in records)
    assert len(records) == 20 and set(keys.values()) == {1}
    assert {r["strategy"] for r in records} == {"none", "full"}
    assert 0 < sum(r["success"] for r in records) < 20  # the sabotage made a real mix


def test_pass_hat_k_equals_tau2_compute_metrics(sabotaged_sweep):
    df = load_records([sabotaged_sweep])
    for strategy, group in df.groupby("strategy"):
        ours = pass_hat_ks(valid(group))
        theirs = compute_metrics(tau2_results(sabotaged_sweep, group.to_dict("records"))).pass_hat_ks
        assert set(ours) == {1, 2} == set(theirs)
        for k in ours:
            assert ours[k] == pytest.approx(theirs[k], abs=1e-12), (strategy, k)


def test_records_match_their_tau2_trajectories(sabotaged_sweep):
    for r in read_records(sabotaged_sweep):
        sim = Results.load(sabotaged_sweep / r["trajectory"]).simulations[0]
        assert sim.reward_info.reward == r["reward"] and sim.trial == r["trial"] and sim.seed == r["seed"]
        agent = [m for m in sim.messages if m.role == "assistant" and m.usage]
        assert len(agent) == r["steps"]
        assert sum(m.usage["prompt_tokens"] for m in agent) == r["prompt_tokens"]
        assert sum(m.usage["completion_tokens"] for m in agent) == r["completion_tokens"]


def test_full_costs_exactly_its_memory_block_every_step(sabotaged_sweep):
    records = read_records(sabotaged_sweep)
    none = {(r["task_id"], r["trial"]): r for r in records if r["strategy"] == "none"}
    for r in (r for r in records if r["strategy"] == "full"):
        block = {s["memory_tokens"] for s in r["step_usage"]}
        assert len(block) == 1 and block.pop() > 100
        assert r["memory_tokens"] == sum(s["memory_tokens"] for s in r["step_usage"])
        assert all(ids == SAMPLE_IDS for ids in r["delivered"])  # all sample guidelines, every step
        twin = none[(r["task_id"], r["trial"])]
        assert twin["memory_tokens"] == 0 and r["prompt_tokens"] > twin["prompt_tokens"]
