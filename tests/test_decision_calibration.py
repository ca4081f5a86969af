"""`make recommend` is calibrated: checked on records drawn from a known truth (tests/known_truth.py) and on
the SIMULATED world, where the right answer is planted. Seeds are fixed, so each count is reproducible; the
design rates behind the bounds were measured over 200 other seeds (docs/deciding.md)."""

from __future__ import annotations

import pytest
from known_truth import draw

from analysis import recommend
from harness.scripted import simulated_world as world
from strategies import render_guidelines
from memory_kit.memory_file import load_memory

SEEDS = range(20)


def _choices(p: dict, tasks: int, trials: int, delta: float) -> list[recommend.Recommendation]:
    return [recommend.recommend(draw(p, tasks, trials, seed), delta_pts=delta)[0] for seed in SEEDS]


@pytest.mark.parametrize("tasks,trials", [(20, 1), (40, 2), (40, 4)])
def test_a_truly_worse_cheap_arm_is_almost_never_recommended(tasks, trials):
    # none is truly 15 points below full on every task and costs a third of the tokens
    recs = _choices({"none": 0.50, "full": 0.65}, tasks, trials, delta=5)
    assert sum(r.choice == "none" for r in recs) <= 1, [r.sentences for r in recs if r.choice == "none"]
    undecided = [r for r in recs if not r.decided]
    for r in undecided:  # never a strategy name; instead the size that would settle it
        assert r.more_tasks is not None and r.more_tasks > 0
        assert any(s.startswith("No decision yet") for s in r.sentences)
        assert not any(s.startswith("Recommended:") for s in r.sentences)
    if tasks == 20:
        assert undecided  # 20 tasks x 1 trial cannot settle a 15-point gap every time: it must say so


def test_a_truly_worse_arm_at_the_margin_is_rarely_shown():
    # none exactly DELTA below full: the boundary of the null; shown in at most alpha of seeds (+ noise)
    recs = _choices({"none": 0.60, "full": 0.65}, 40, 4, delta=5)
    assert sum(r.choice == "none" for r in recs) <= 2


def test_a_truly_equal_cheap_arm_is_recommended_in_most_seeds():
    # Equal arms at 40 x 4 (p = 0.5): the paired difference's standard error is 5.6 points, so non-inferiority
    # can only be shown at a margin well above it (DELTA = 15: ~80% of seeds); at DELTA = 5 it takes ~300 tasks.
    recs = _choices({"none": 0.50, "full": 0.50}, 40, 4, delta=15)
    chosen = [r for r in recs if r.choice == "none"]
    assert len(chosen) > len(recs) / 2
    for r in chosen:
        assert any(s.startswith("none: non-inferior at margin 15") for s in r.sentences)
        assert any("Recommended: none" in s and "non-inferior at margin 15 points" in s for s in r.sentences)


def test_no_decision_is_said_plainly_and_sized():
    [rec] = recommend.recommend(draw({"none": 0.50, "full": 0.55}, 10, 1, seed=4), delta_pts=5)
    assert rec.choice is None and rec.candidates == []
    text = "\n".join(rec.sentences)
    assert "No decision yet" in text and "Recommended" not in text
    assert rec.more_tasks > 0 and f"{rec.more_tasks:,} more than now" in text


def test_more_trials_need_fewer_tasks_when_trials_disagree():
    [rec] = recommend.recommend(draw({"none": 0.50, "full": 0.52}, 20, 2, seed=1), delta_pts=5)
    assert not rec.decided
    plans = [s for s in rec.sentences if s.startswith("To settle it at")]
    assert len(plans) == 2 and "at 2 trials" in plans[0] and "at 4 trials" in plans[1]
    n = [int(s.split("about ")[1].split(" tasks")[0].replace(",", "")) for s in plans]
    assert n[1] < n[0]


def _sim_blocks(artifact, tasks: list[str]) -> dict[str, dict[str, str]]:
    """What none, core_retrieval (MiniLM, queried with the task's request, as the simulated user states it) and
    full deliver on each task of the simulated world."""
    from harness.scripted.tau2_script import request_of as _request
    from strategies import StepView, TaskView
    from strategies.core_retrieval import CoreRetrieval
    from tau2.run import load_tasks

    guidelines, _ = load_memory(artifact)
    requests = {str(t.id): _request(t) for t in load_tasks("retail", "test")}
    cr = CoreRetrieval(guidelines=tuple(guidelines))
    full = render_guidelines(guidelines)
    return {"none": {t: "" for t in tasks},
            "core_retrieval": {t: cr.deliver(TaskView("tau2_retail", t, requests[t]), StepView(0)).text
                               for t in tasks},
            "full": {t: full for t in tasks}}


def test_simulated_world_never_recommends_core_retrieval_below_the_margin(artifact):
    _, meta = load_memory(artifact)
    tasks = meta["simulated"]["tasks"][:40]
    blocks = _sim_blocks(artifact, tasks)
    prof, w = world.PROFILES["strong"], world.load_world(artifact)
    planted = {s: world.expected_rates(prof, w, b) for s, b in blocks.items()}
    assert 100 * (planted["full"] - planted["core_retrieval"]) > 5  # the planted deficit exceeds DELTA
    import pandas as pd

    picks = []
    for seed in SEEDS:
        df = pd.DataFrame(world.simulate_records(prof, w, blocks, [seed * 1000 + j for j in range(4)]))
        tokens = df["memory_tokens"] * 8 + 13_000  # synthetic prices: memory costs prompt tokens each step
        df = df.assign(prompt_tokens=tokens, completion_tokens=400, memory=None, run_dir="nowhere")
        picks.append(recommend.recommend(df, delta_pts=5)[0].choice)
    assert "core_retrieval" not in picks and "none" not in picks, picks
    assert picks.count("full") > len(picks) / 2  # the planted best is found, not just the wrong ones avoided
