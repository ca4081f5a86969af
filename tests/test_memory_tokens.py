"""The acceptance sweep in small: none, full and core_retrieval on the hand-written sample, scripted oracle.

Memory tokens per task must order none (0) < core_retrieval < full, read from the records themselves; and
core_retrieval's deliveries must hold the core guidelines at every step and stay fixed within a task.
"""

from __future__ import annotations


import pytest
from conftest import main_in_process

from memory_kit.memory_file import load_memory
from analysis import load_records
from analysis.audit import never_delivered, outcome_by_guideline

SAMPLE = "strategies/samples/tau2_sample.jsonl"


@pytest.fixture(scope="module")
def records(tmp_path_factory):
    runs = tmp_path_factory.mktemp("runs")
    proc = main_in_process("harness.run", "-m", "model=oracle", "strategy=none,full,core_retrieval",
                           "benchmark=tau2_retail", "benchmark.split=test", "benchmark.limit=3", f"memory={SAMPLE}",
                           "run_name=tokens", f"runs_dir={runs}", "progress=false")
    assert proc.returncode == 0, proc.stderr[-3000:]
    df = load_records([runs / "tokens"])
    # the hand-written sample has no `learned_from`: every table names its rows so (analysis.runs.load)
    assert set(df["strategy"]) == {"none", "full [unknown provenance]", "core_retrieval [unknown provenance]"}
    return df.assign(strategy=df["strategy"].str.removesuffix(" [unknown provenance]"))


def test_memory_tokens_order_none_core_full(records):
    per_task = records.groupby("strategy")["memory_tokens"].mean()
    assert per_task["none"] == 0 < per_task["core_retrieval"] < per_task["full"]
    assert len(records) == 9 and records["error"].isna().all()


def test_core_retrieval_delivers_core_every_step_and_once_per_task(records):
    guidelines, _ = load_memory(SAMPLE)
    core = {g.id for g in guidelines if g.support >= 3}
    for rec in records[records.strategy == "core_retrieval"].itertuples():
        steps = [tuple(s) for s in rec.delivered]
        assert len(set(steps)) == 1  # selected once for the task
        assert core <= set(steps[0]) and len(steps[0]) <= len(core) + 10
    for rec in records[records.strategy == "full"].itertuples():
        assert all(set(s) == {g.id for g in guidelines} for s in rec.delivered)


def test_audit_reads_the_same_records(records):
    missing = never_delivered(records)
    by_strategy = {key[2]: ids for key, ids in missing.items()}
    assert by_strategy["full"] == [] and "none" not in by_strategy
    table = outcome_by_guideline(records)
    core_rows = table[(table.strategy == "core_retrieval") & (table.guideline == "g-auth-first")]
    assert core_rows["present"].tolist() == [3]
    delivered = {g for rec in records[records.strategy == "core_retrieval"].itertuples() for s in rec.delivered for g in s}
    assert set(by_strategy["core_retrieval"]) == {g.id for g in load_memory(SAMPLE)[0]} - delivered
