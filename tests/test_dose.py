"""The dose axis (+experiment=dose, docs/dose.md): its cells are ordinary, distinct jobs; the tables and
`make recommend` rank them like any strategy; and on the SIMULATED world the dose-response curve recovers the
planted shape — rises then falls for `small`, rises and saturates for `strong` — first analytically (the
world's own arithmetic on what each cell delivers), then through the analysis, from records drawn exactly as
a sweep's episodes are (world.simulate_records: same p, same draw; tests/test_simulated_world.py shows a real
sweep equals it). The memory blocks come from the strategies themselves; a bag-of-words embedder keeps it fast."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ace_fakes import FakeBagOfWordsEmbedder
from conftest import SAMPLE_MEMORY, compose

from analysis import load_records, summarize
from analysis.recommend import recommend
from analysis.tables import analyse, write
from analysis.views import curves
from analysis.views.plots import dose_response
from memory_kit.memory_file import load_memory
from harness.scripted import simulated_world as world
from strategies.ace.retrieval import AceRetrieval
from strategies import StepView, TaskView
from strategies.core_retrieval import CoreRetrieval
from strategies.full import FullMemory
from strategies.ace.strategy import read_playbook_or_guidelines

CELLS = ["none", *[f"dose/core_retrieval_k{k}" for k in (0, 3, 10, 30)],
         *[f"dose/ace_retrieval_k{k}" for k in (5, 20, 80)], *[f"dose/full_b{b}" for b in (1000, 4000, 16000, "none")]]
BANK_CELLS = [f"dose/reasoning_bank_k{k}" for k in range(5)]  # online learners: no analytic curve below


def test_dose_cells_are_distinct_jobs_with_their_option_in_the_key():
    from harness.config import register_schemas
    from harness.run import expand_sweeps, with_config_sweeps
    from harness.runner import job_key

    register_schemas()
    jobs = expand_sweeps(with_config_sweeps(["+experiment=dose", "model=oracle"]))
    cfgs = [compose(*job, f"memory={SAMPLE_MEMORY}") for job in jobs]
    assert sorted(c.strategy.variant or "" for c in cfgs) == sorted(
        ["", "top_k=0", "top_k=3", "top_k=10", "top_k=30", "top_k=5", "top_k=20", "top_k=80", "budget_tokens=1000",
         "budget_tokens=4000", "budget_tokens=16000", "budget_tokens=none", *[f"top_k={k}" for k in range(5)]])
    keys = {job_key(c) for c in cfgs}
    assert len(keys) == len(CELLS) + len(BANK_CELLS) and any(k.endswith("/core_retrieval(top_k=3)") for k in keys)
    # reasoning_bank's k 0-4 (the paper's appendix sweep), each online from an empty bank whatever memory= names
    banks = {c.strategy.options["top_k"]: c for c in cfgs if c.strategy.name == "reasoning_bank"}
    assert sorted(banks) == [0, 1, 2, 3, 4] and all(c.job_memory is None for c in banks.values())
    assert all(c.job_memory == str(SAMPLE_MEMORY) for c in cfgs if c.strategy.name == "core_retrieval")
    by_variant = {(c.strategy.name, c.strategy.variant): c.strategy.options for c in cfgs}
    assert by_variant[("core_retrieval", "top_k=30")]["top_k"] == 30
    assert by_variant[("full", "budget_tokens=none")]["budget_tokens"] is None
    assert job_key(compose("strategy=core_retrieval", "model=oracle")).endswith("/core_retrieval")  # keys kept


@pytest.fixture(scope="module")
def blocks(artifact) -> dict[tuple[str, str | None], dict[str, str]]:
    """(strategy, variant) -> task id -> the memory block that dose cell delivers on the user's request."""
    from harness.memory.simulated import _bench

    guidelines, _ = load_memory(artifact)
    playbook, _ = read_playbook_or_guidelines(artifact)
    embedder = FakeBagOfWordsEmbedder()
    made = {("none", None): None}
    for k in (0, 3, 10, 30):
        made[("core_retrieval", f"top_k={k}")] = CoreRetrieval(options={"top_k": k, "embed_cache": None},
                                                               guidelines=tuple(guidelines), embedder=embedder)
    for k in (5, 20, 80):
        made[("ace_retrieval", f"top_k={k}")] = AceRetrieval(playbook, {"top_k": k}, embedder=embedder)
    for b in (1000, 4000, 16000, None):
        made[("full", f"budget_tokens={b or 'none'}")] = FullMemory(options={"budget_tokens": b},
                                                                    guidelines=tuple(guidelines))
    requests = {str(t.id): t.user_scenario.instructions.reason_for_call for t in _bench("tau2_retail", "test").tasks()}
    said = lambda r: StepView(1, ({"role": "assistant", "content": "Hi"}, {"role": "user", "content": r}))  # noqa: E731
    return {cell: {t: s.deliver(TaskView("tau2_retail", t, ""), said(r)).text if s else "" for t, r in requests.items()}
            for cell, s in made.items()}


def expected_curve(blocks, w, profile: str) -> list[tuple[float, float]]:
    """(memory tokens per task, expected success) per cell, by tokens: the analytic dose-response curve."""
    prof = world.PROFILES[profile]
    points = []
    for per_task in blocks.values():
        tokens = sum(world.read_lines(world.rendered_lines(b), w).memory_tokens for b in per_task.values())
        points.append((tokens / len(per_task), world.expected_rates(prof, w, per_task)))
    return sorted(points)


def test_planted_shape_analytically(blocks, artifact):
    w = world.load_world(artifact)
    small = expected_curve(blocks, w, "small")
    peak = max(range(len(small)), key=lambda i: small[i][1])
    assert small[0] == (0, pytest.approx(0.5)) and 0 < peak < len(small) - 1  # rises then falls
    assert small[peak][1] > small[0][1] + 0.02 and small[-1][1] < small[0][1] - 0.2
    strong = expected_curve(blocks, w, "strong")
    top = max(y for _, y in strong)
    assert strong[0] == (0, pytest.approx(0.55)) and top > 0.55 + 0.25  # rises...
    assert strong[-1][1] > top - 0.01  # ... and saturates: the largest dose is (within 1 pt) the best
    assert max(y for x, y in strong if x > 3000) - min(y for x, y in strong if x > 3000) < 0.03  # flat up there


def write_run(run_dir: Path, blocks, w, profile: str, trials: int = 12) -> None:
    prof = world.PROFILES[profile]
    named = {f"{s}|{v or ''}": per_task for (s, v), per_task in blocks.items()}
    rows = world.simulate_records(prof, w, named, trial_seeds=list(range(trials)), run=run_dir.name)
    for row in rows:
        strategy, variant = row["strategy"].split("|")
        row.update(strategy=strategy, job=row["job"].replace(row["strategy"], strategy + (f"({variant})" if variant
                                                                                        else "")))
        if variant:
            row["strategy_variant"] = variant
        row.update(prompt_tokens=2000 + row["memory_tokens"], completion_tokens=100, memory="simulated.jsonl")
    run_dir.mkdir(parents=True)
    (run_dir / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


@pytest.mark.parametrize("profile", ["small", "strong"])
def test_the_analysis_recovers_the_planted_curve(profile, blocks, artifact, tmp_path):
    w = world.load_world(artifact)
    write_run(tmp_path / profile, blocks, w, profile)
    records = load_records([tmp_path / profile])
    assert {"core_retrieval (top_k=3)", "full (budget_tokens=none)", "ace_retrieval (top_k=80)"} <= set(
        records["strategy"])
    summary = summarize(records, n_boot=200)
    assert len(summary) == len(CELLS)  # every dose cell its own row, Δ vs none as for any strategy
    assert summary.set_index("strategy")["Δsuccess_pts"].notna().sum() == len(CELLS) - 1
    [cell] = curves.dose_points(summary).values()
    points, (base, base_lo, base_hi) = cell["points"], cell["baseline"]
    assert set(points["family"]) == {"core_retrieval", "ace_retrieval", "full"} and len(points) == len(CELLS) - 1
    expected = dict((round(x, 6), y) for x, y in expected_curve(blocks, w, profile))
    for _, p in points.iterrows():  # each measured point near its analytic expectation
        assert abs(p["success"] - expected[round(p["tokens"], 6)]) < 0.06, p
    by_tokens = points.sort_values("tokens")
    best = by_tokens.loc[by_tokens["success"].idxmax()]
    largest = by_tokens.iloc[-1]
    if profile == "small":  # the best dose is a small one, the largest falls clearly below none (the planted
        # rise, +3.6 pts, is below what 40 tasks x 12 trials resolve: it is checked analytically above)
        assert best["tokens"] < 1000 and largest["hi"] < base_lo
    else:  # rises above none and saturates: the largest dose is as good as the best
        assert largest["lo"] > base_hi and largest["hi"] >= best["success"]
    pngs = [p for p in dose_response(summary, tmp_path / "plots") if p.suffix == ".png"]
    assert [p.name for p in pngs] == ["dose_response.png"] and pngs[0].stat().st_size > 5000


def test_tables_and_recommend_treat_dose_cells_as_strategies(blocks, artifact, tmp_path):
    w = world.load_world(artifact)
    write_run(tmp_path / "small", blocks, w, "small", trials=8)
    result = analyse([str(tmp_path / "small")], n_boot=200)
    written = {p.name for p in write(result, tmp_path / "out")}
    assert "dose_response.png" in written
    table = (tmp_path / "out" / "strategies.md").read_text()
    assert "core_retrieval (top_k=3)" in table and "full (budget_tokens=1000)" in table
    [rec] = recommend(load_records([tmp_path / "small"]), k=1, by="tokens", delta_pts=10.0)
    assert set(rec.per_task) == set(result.summary["strategy"])  # every dose cell priced and considered
    assert rec.best != "full (budget_tokens=none)"  # the planted harm of the biggest dose is seen
    if rec.decided:
        assert rec.choice in rec.candidates


def test_no_dose_cells_no_dose_plot(tmp_path):
    import pandas as pd

    summary = pd.DataFrame([{"benchmark": "b", "split": "s", "model": "m", "assembly": "", "strategy": s,
                             "success": 0.5, "success_lo": 0.4, "success_hi": 0.6, "memory_tokens/task": 10.0}
                            for s in ("none", "full", "ace (no GT)")])
    assert curves.dose_points(summary) == {} and dose_response(summary, tmp_path) == []


def test_end_of_job_infra_warning_keeps_dose_cells_apart(tmp_path):
    from harness.runner.infra_balance import infra_warning
    from harness.store import RunStore

    run = tmp_path / "run"
    run.mkdir()
    rows = [{"run": "run", "job": f"tau2_retail/test/m/core_retrieval(top_k={k})", "benchmark": "tau2_retail",
             "split": "test", "model": "m", "strategy": "core_retrieval", "strategy_variant": f"top_k={k}",
             "task_id": str(t), "trial": 0, "success": False, "error": "infra" if k == 3 and t < 2 else None}
            for k in (0, 3) for t in range(4)]
    (run / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    warning = infra_warning(RunStore(run).read(), "tau2_retail/test/m/core_retrieval(top_k=3)")
    assert warning and "core_retrieval (top_k=0) 0/4, core_retrieval (top_k=3) 2/4" in warning  # as tables name them
