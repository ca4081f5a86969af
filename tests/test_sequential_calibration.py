"""The sequential decision (analysis/statistics/sequential.py) is calibrated on planted truths, at the edges too:
over fixed seeds, the chance of recommending a strategy at least DELTA below the best stays within alpha (its
Monte-Carlo interval reaches down to alpha), and the chance of a right decision is no more than 5 points below
the fixed design's on the same draws. bench/sequential.py runs the same cases over 200 seeds (docs/deciding.md)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import norm

from analysis.statistics import sequential
from analysis.statistics.sequential_replay import Truth, replay, right_gap, run_sequential
from analysis.statistics.stats import ALPHA

SEEDS = range(40)
FOUR = {"none": 0.50, "core_retrieval": 0.55, "ace": 0.60, "full": 0.75}
CASES = [
    Truth("ceiling", {"none": 0.9, "full": 1.0}, 40, 1),
    Truth("floor", {"none": 0.0, "full": 0.1}, 40, 4),
    Truth("at the margin", {"none": 0.60, "full": 0.65}, 40, 4),
    Truth("at the margin, four", {"none": 0.60, "core_retrieval": 0.60, "ace": 0.60, "full": 0.65}, 40, 1),
    Truth("equal", {"none": 0.5, "full": 0.5}, 40, 4),
    Truth("mid-range clear", {"none": 0.5, "full": 0.7}, 40, 4),
    Truth("mid-range clear, one trial", {"none": 0.5, "full": 0.7}, 40, 1),
    Truth("mid-range clear, four", FOUR, 40, 4),
]


def check(truth: Truth, clear: bool = False) -> None:
    fixed, seq = replay(truth, SEEDS)
    assert seq.interval(seq.wrong)[0] <= ALPHA, (truth.name, seq.wrong)
    gap, upper = right_gap(fixed, seq)  # paired by seed: its Monte-Carlo bound must reach -5 points
    assert upper >= -0.05, (truth.name, seq.right, fixed.right)
    assert seq.mean <= fixed.mean  # never more episodes than the fixed design
    if clear:  # the point of it: a clear answer costs well under the fixed design's episodes
        assert seq.mean <= 0.65 * fixed.mean and seq.right >= 0.9 * len(SEEDS), (truth.name, seq.mean, seq.right)


@pytest.mark.parametrize("truth", CASES, ids=[c.name for c in CASES])
def test_planted_truths(truth):
    check(truth, clear=truth.name == "mid-range clear")


@pytest.mark.parametrize("profile", ["strong", "small"])
def test_simulated_profiles(artifact, profile):
    from harness.scripted import simulated_world as world
    from strategies import render_guidelines
    from memory_kit.memory_file import load_memory

    guidelines, meta = load_memory(artifact)
    tasks, w = meta["simulated"]["tasks"][:40], world.load_world(artifact)
    blocks = {"none": "", "full": render_guidelines(guidelines)}
    p = {s: tuple(world.expected_p(world.PROFILES[profile], w, t, b) for t in tasks) for s, b in blocks.items()}
    check(Truth(f"simulated {profile}", p, 40, 4), clear=True)


def test_the_boundary_is_the_published_one():
    # Lan-DeMets O'Brien-Fleming-type spending, 4 equally spaced looks, one-sided 0.025: z = 4.33, 2.96, 2.36,
    # 2.01 (Jennison & Turnbull 2000, table 7.6; gsDesign's sfLDOF gives the same)
    z = [norm.isf(a) for a in sequential.nominal_levels((0.25, 0.5, 0.75, 1.0), 0.025)]
    assert np.allclose(z, [4.33, 2.96, 2.36, 2.01], atol=0.006), z
    # a last look taken early (the budget) spends what is left: its level is above the planned one
    planned = sequential.nominal_levels((0.5, 0.75), 0.05)[-1]
    assert sequential.nominal_levels((0.5, 0.75), 0.05, final=True)[-1] > planned


def test_a_look_needs_twenty_tasks_and_a_worse_arm_is_dropped():
    design = sequential.Design(("none", "core_retrieval", "full"), 40, 0.05, blocks=4)
    rng = np.random.default_rng(3)
    metric = {"none": rng.binomial(4, 0.2, 40) / 4, "core_retrieval": rng.binomial(4, 0.8, 40) / 4,
              "full": rng.binomial(4, 0.85, 40) / 4}
    first = sequential.take_look(design, [], {s: m[:10] for s, m in metric.items()}, design.strategies)
    assert first.level == 0 and first.stop is None and not first.comparisons  # 10 tasks: no test
    second = sequential.take_look(design, [first], {s: m[:20] for s, m in metric.items()}, design.strategies)
    assert "none" in second.dropped and "none" not in second.still  # 60 points below: dropped at 20 tasks
    assert second.choice in (None, "core_retrieval", "full")


def test_a_truly_worse_arm_is_rarely_left_alone():
    # none 10 points below full at one trial: whatever the looks, none is recommended in at most alpha of seeds
    truth = Truth("worse", {"none": 0.55, "full": 0.65}, 60, 1)
    picks = [run_sequential(truth, truth.draw(seed)).choice for seed in range(60)]
    assert picks.count("none") <= 1
