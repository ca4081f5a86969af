"""The noise floor (analysis/noise_floor.py): the A/A spread from a run's own trials matches how far two
independent runs of one configuration actually differ, and `+experiment=aa` pairs the two seeds' cells with the
power module's prediction beside them."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from analysis import noise_floor
from harness.scripted import simulated_world as world

PROF = world.PROFILES["strong"]
EMPTY = world.World("none", {}, {})
TASKS = [str(t) for t in range(40)]


def run(seeds: list[int], strategy: str = "none") -> pd.DataFrame:
    return pd.DataFrame(world.simulate_records(PROF, EMPTY, {strategy: {t: "" for t in TASKS}}, trial_seeds=seeds))


def test_the_spread_is_trial_noise_at_the_cells_size():
    """X from one run (40 tasks x 4 trials, p = 0.55) against the analytic 95% of |A - B| for two independent runs
    of that size, and how often such pairs really fall within X."""
    analytic = 100 * 1.96 * math.sqrt(40 * 2 * 0.55 * 0.45 / 4) / 40
    spreads, inside = [], 0
    for seed in range(40):
        figures = noise_floor.aa_spread(run([seed * 10 + i for i in range(4)]))
        assert figures["aa_trials"] == 4 and figures["aa_half"] == "2+2"
        assert figures["aa_spread_pts"] == pytest.approx(figures["aa_spread_half_pts"] / math.sqrt(2))
        spreads.append(figures["aa_spread_pts"])
        a = run([10_000 + seed * 10 + i for i in range(4)]).groupby("task_id")["success"].mean()
        b = run([20_000 + seed * 10 + i for i in range(4)]).groupby("task_id")["success"].mean()
        inside += abs(100 * float((a - b).mean())) <= figures["aa_spread_pts"]
    assert abs(np.mean(spreads) - analytic) < 0.15 * analytic
    assert inside >= 34  # ~95% of 40 independent A/A pairs within the run's own X


def test_one_trial_has_no_spread_and_the_summary_gets_columns():
    assert noise_floor.aa_spread(run([1])) == {}
    summary = pd.DataFrame([{"benchmark": "tau2_simulated", "split": "test", "model": "memdeliv-simulated/strong",
                             "assembly": "", "strategy": "none", "success": 0.5}])
    added = noise_floor.add_aa(summary, run([1, 2, 3, 4]))
    assert added["aa_spread_pts"].iloc[0] > 0 and "up to" in noise_floor.sentence(
        noise_floor.per_cell(run([1, 2, 3, 4])).iloc[0])


def test_the_aa_experiment_pairs_two_seeds_with_the_power_prediction():
    a, b = run([1, 2, 3, 4], "none"), run([5, 6, 7, 8], "none")
    both = pd.concat([a.assign(strategy="none (aa_seed=300)"), b.assign(strategy="none (aa_seed=1300)")])
    [pair] = noise_floor.experiment_pairs(both).to_dict("records")
    assert (pair["a"], pair["b"], pair["tasks"], pair["trials"]) == ("none (aa_seed=300)", "none (aa_seed=1300)", 40, 4)
    observed = 100 * float((a.groupby("task_id")["success"].mean() - b.groupby("task_id")["success"].mean()).mean())
    assert pair["observed_pts"] == pytest.approx(observed)
    analytic = 100 * 1.96 * math.sqrt(40 * 2 * 0.55 * 0.45 / 4) / 40
    assert abs(pair["predicted_95_pts"] - analytic) < 0.25 * analytic and pair["MDΔ_pts"] > pair["predicted_95_pts"]


def test_the_aa_experiment_is_two_distinct_jobs_per_strategy():
    from conftest import compose

    from harness.config import register_schemas
    from harness.run import expand_sweeps, with_config_sweeps
    from harness.runner import job_key

    register_schemas()
    cfgs = [compose(*job) for job in expand_sweeps(with_config_sweeps(["+experiment=aa", "model=oracle",
                                                                       "strategy=none,full"]))]
    assert sorted((c.strategy.name, c.benchmark.seed) for c in cfgs) == [("full", 300), ("full", 1300),
                                                                         ("none", 300), ("none", 1300)]
    keys = {job_key(c) for c in cfgs}
    assert len(keys) == 4 and any(k.endswith("/none(aa_seed=1300)") for k in keys)
