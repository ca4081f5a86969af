"""Analysis metrics against their reference definitions: tau2's compute_metrics, AppWorld's TGC/SGC, bootstrap."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis import jobs_frame, load_memory_history, load_records, steps_frame, paired_comparisons, summarize
from analysis.statistics import stats
from analysis.statistics.metrics import sgc, tgc

FIXTURES = Path(__file__).parent / "fixtures" / "runs"
ORACLE, MIXED = FIXTURES / "oracle_retail", FIXTURES / "constructed_mixed"
SABOTAGED = FIXTURES / "oracle_sabotaged"  # a real sweep whose scripted model fails a deterministic share


def tau2_results(records: pd.DataFrame):
    """The same outcomes as a tau2 Results object: real retail tasks, the template run's info and simulation."""
    from tau2.data_model.simulation import Results
    from tau2.run import load_tasks

    template = Results.load(ORACLE / "trajectories" / "template.json")
    wanted = set(records["task_id"])
    tasks = [t for t in load_tasks("retail", "test") if t.id in wanted]
    sims = []
    for i, r in enumerate(records.itertuples()):
        sim = template.simulations[0].model_copy(deep=True)
        sim.id, sim.task_id, sim.trial = f"sim-{i}", r.task_id, int(r.trial)
        sim.reward_info.reward = float(r.reward)
        sims.append(sim)
    info = template.info.model_copy(update={"num_trials": int(records["trial"].nunique())})
    return Results(info=info, tasks=tasks, simulations=sims)


@pytest.fixture(scope="module")
def mixed() -> pd.DataFrame:
    return load_records([MIXED])


@pytest.mark.parametrize("run, model, strategy", [
    (SABOTAGED, "memdeliv-scripted/oracle", "none"), (SABOTAGED, "memdeliv-scripted/oracle", "full"),
    (MIXED, "constructed/model-a", "none"), (MIXED, "constructed/model-a", "full"),
    (MIXED, "constructed/model-a", "core_retrieval"), (MIXED, "constructed/model-b", "full")])
def test_pass_hat_k_equals_tau2_compute_metrics(run, model, strategy):
    from tau2.metrics.agent_metrics import compute_metrics

    records = load_records([run])
    cell = records[(records["model"] == model) & (records["strategy"] == strategy)]
    # tau2-bench's leaderboard convention: an infra-error simulation is a failed trial (reward 0)
    ok = cell.assign(reward=cell["reward"].where(cell["error"] != "infra", 0.0))
    assert 0 < ok["success"].sum() < len(ok)  # mixed outcomes, so Pass^k differs across k
    theirs = compute_metrics(tau2_results(ok))
    ours = summarize(cell, n_boot=200).iloc[0]
    assert set(theirs.pass_hat_ks) == {k for k in range(1, 5) if not pd.isna(ours.get(f"pass^{k}"))}
    for k, value in theirs.pass_hat_ks.items():
        assert ours[f"pass^{k}"] == pytest.approx(value, abs=1e-12), k
    assert ok["reward"].mean() == pytest.approx(theirs.avg_reward)


def test_infra_errors_count_as_failed_trials_and_are_counted(mixed):
    row = summarize(mixed, n_boot=100).set_index(["model", "strategy"]).loc[("constructed/model-a", "none")]
    assert row["infra_errors"] == 1 and row["records"] == 16 and row["excluded"] == 0
    assert row["trials"] == 4  # tau2-bench's leaderboard convention: the infra trial is a failed trial
    # tasks 5, 9, 12, 17 pass 4/4, 2/4 (task 9's infra trial failed), 1/4, 0/4
    assert row["success"] == pytest.approx((1 + 2 / 4 + 0.25 + 0) / 4)
    assert row["pass^2"] == pytest.approx((1 + 1 / 6 + 0 + 0) / 4)  # C(2,2)/C(4,2) for task 9


def test_exclude_infra_is_the_non_default_view(mixed):
    row = summarize(mixed, n_boot=100, exclude=("infra",)).set_index(["model", "strategy"]).loc[
        ("constructed/model-a", "none")]
    assert row["infra_errors"] == 1 and row["records"] == 15 and row["excluded"] == 1
    assert row["trials"] == 3  # task 9 lost a trial, so Pass^k stops at k=3 like tau2's own compute_metrics
    assert pd.isna(row.get("pass^4"))
    assert row["success"] == pytest.approx((1 + 2 / 3 + 0.25 + 0) / 4)


def appworld_toy() -> pd.DataFrame:
    # 3 scenarios x 3 tasks, 1 trial: scenario a passes all, b fails one, c passes one
    outcome = {"aaaaaaa": [1, 1, 1], "bbbbbbb": [1, 0, 1], "ccccccc": [0, 0, 1]}
    rows = [{"task_id": f"{s}_{i + 1}", "success": bool(v), "trial": 0, "error": None, "benchmark": "appworld",
             "split": "dev", "model": "m", "strategy": "none", "run": "toy", "reward": float(v)}
            for s, vs in outcome.items() for i, v in enumerate(vs)]
    path_rows = pd.DataFrame(rows)
    path_rows["scenario_id"] = path_rows["task_id"].str[:7]
    return path_rows


def test_tgc_sgc_follow_appworld_definitions():
    df = appworld_toy()
    # AppWorld: TGC = tasks passed / tasks; SGC = scenarios with every task passed / scenarios
    assert tgc(df) == pytest.approx(6 / 9)
    assert sgc(df) == pytest.approx(1 / 3)
    row = summarize(df, n_boot=100).iloc[0]
    assert row["tgc"] == pytest.approx(6 / 9) and row["sgc"] == pytest.approx(1 / 3) and row["scenarios"] == 3


def test_scenario_id_is_derived_from_appworld_ids(tmp_path):
    rows = appworld_toy().drop(columns="scenario_id")
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows.to_dict("records")))
    df = load_records([tmp_path])
    assert sorted(df["scenario_id"].unique()) == ["aaaaaaa", "bbbbbbb", "ccccccc"]
    assert load_records([ORACLE])["scenario_id"].isna().all()  # tau2 ids are not AppWorld ids


def test_bootstrap_ci_recovers_a_known_rate():
    rng = np.random.default_rng(7)
    true_rate, covered = 0.62, 0
    for i in range(60):
        sample = rng.random(200) < true_rate
        lo, hi = stats.bootstrap_ci(sample.astype(float), n_boot=400, seed=i)
        covered += lo <= true_rate <= hi
        assert hi - lo < 0.16  # ± ~1.96 * sqrt(.62 * .38 / 200) ≈ ±0.067
    assert covered >= 52  # nominal 95% of 60 = 57; allow sampling slack


def test_mcnemar_and_paired_comparison():
    assert stats.mcnemar_exact(0, 0) == 1.0
    assert stats.mcnemar_exact(10, 0) == pytest.approx(2 / 2 ** 10)
    a = pd.Series([1.0] * 30, index=[f"t{i}" for i in range(30)])
    b = pd.Series([1.0] * 18 + [0.0] * 12, index=a.index)
    r = stats.paired(a, b, n_boot=500)
    assert r.test == "mcnemar" and r.n == 30 and r.diff == pytest.approx(0.4)
    assert r.p == pytest.approx(2 / 2 ** 12) and r.lo > 0 and not r.few_tasks


def test_paired_comparisons_cover_every_pair(mixed):
    pairs = paired_comparisons(mixed, n_boot=100)
    a = pairs[pairs["model"] == "constructed/model-a"]
    assert {(x, y) for x, y in zip(a["a"], a["b"])} == {("core_retrieval", "none"), ("full", "none"),
                                                         ("full", "core_retrieval")}
    full_none = a[(a["a"] == "full") & (a["b"] == "none")].iloc[0]
    assert full_none["test"] == "sign-flip" and full_none["few_tasks"]  # 4 trials -> per-task means
    # full 4,3,2,1 of 4 vs none 4/4, 2/4 (an infra trial = a failed one), 1/4, 0/4 -> differences 0, 1/4, 1/4, 1/4
    assert full_none["diff_pts"] == pytest.approx(100 * (0 + 0.25 + 0.25 + 0.25) / 4) and full_none["pairs"] == 16
    excluded = paired_comparisons(mixed, n_boot=100, exclude=("infra",))
    row = excluded[(excluded["model"] == "constructed/model-a") & (excluded["a"] == "full") & (excluded["b"] == "none")]
    # without task 9's infra trial (3), full is compared on the trials both have there: 3/3 vs 2/3, not 3/4 vs 2/3
    assert row.iloc[0]["diff_pts"] == pytest.approx(100 * (0 + 1 / 3 + 0.25 + 0.25) / 4) and row.iloc[0]["pairs"] == 15


def test_deltas_vs_none(mixed):
    s = summarize(mixed, n_boot=100).set_index(["model", "strategy"])
    full, none = s.loc[("constructed/model-b", "full")], s.loc[("constructed/model-b", "none")]
    assert full["Δsuccess_pts"] == pytest.approx(100 * (14 / 16 - 10 / 16))
    assert full["Δsuccess_%"] == pytest.approx(100 * (14 / 10 - 1))
    assert full["Δtokens_%"] == pytest.approx(100 * (full["tokens/task"] / none["tokens/task"] - 1))
    assert full["Δtokens_%"] > 0  # the oracle's `full` prompts carry the memory block


def test_three_grains(mixed):
    jobs = jobs_frame(mixed)
    assert len(jobs) == 5 and jobs["records"].sum() == len(mixed) and jobs["infra_errors"].sum() == 1
    steps = steps_frame(mixed)
    assert len(steps) == mixed["steps"].sum()
    full_steps = steps[steps["strategy"] == "full"]
    assert (full_steps["n_delivered"] > 0).all() and (full_steps["memory_tokens"] > 0).all()
    assert (steps[steps["strategy"] == "none"]["n_delivered"] == 0).all()


def test_malformed_lines_reported_with_file_and_line(tmp_path):
    good = (ORACLE / "results.jsonl").read_text().splitlines()[0]
    (tmp_path / "results.jsonl").write_text(good + "\n{not json\n[1, 2]\n" + good[:40])
    warnings = []
    df = load_records([tmp_path], warn=warnings.append)
    assert len(df) == 1
    assert [w.split(": skipped")[0] for w in warnings] == [f"{tmp_path / 'results.jsonl'}:{n}" for n in (2, 3, 4)]
    assert "torn last" in warnings[-1]


def test_memory_history(tmp_path):
    history = load_memory_history([MIXED])
    assert list(history["guidelines"])[:3] == [0, 3, 5] and (history["strategy"] == "ace").all()
    assert load_memory_history([ORACLE]).empty
    bad = tmp_path / "memory" / "x"
    bad.mkdir(parents=True)
    (bad / "history.jsonl").write_text('{"update": 0, "guidelines": ["a", "b"]}\n{"guidelines": 3}\n')
    warnings = []
    got = load_memory_history([tmp_path], warn=warnings.append)
    assert list(got["guidelines"]) == [2] and got["strategy"].iloc[0] == "x"
    assert len(warnings) == 1 and "history.jsonl:2" in warnings[0]
