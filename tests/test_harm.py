"""Per-task help and harm (analysis/statistics/harm.py): the rule, its chance level, the links to the viewer's compare
page, and, on the SIMULATED world with planted harms (none and full over a corrupted artifact, 40 tasks x 4 trials,
records drawn as a sweep draws them), that the harmed tasks it lists are mostly those the world planted harm
on, while `none` against itself lists about as many as chance says."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from analysis.statistics import harm
from harness.memory.corrupt import Spec, corrupt
from strategies import render_guidelines
from memory_kit.memory_file import load_memory
from harness.scripted import simulated_world as world


def test_the_rule():
    assert harm.flag(0, 1, 1, 1) == -1 and harm.flag(1, 1, 0, 1) == 1 and harm.flag(1, 1, 1, 1) == 0
    harmed_at_4 = {(s, n) for s in range(5) for n in range(5) if harm.flag(s, 4, n, 4) < 0}
    assert harmed_at_4 == {(0, 4), (1, 4), (0, 3)}  # 4-0, 4-1 and 3-0 of successes
    assert {(s, n) for s in range(3) for n in range(3) if harm.flag(s, 2, n, 2) < 0} == {(0, 2)}
    assert harm.flag(4, 4, 4, 4) == 0 and harm.flag(0, 4, 0, 4) == 0  # no spread: no verdict


def test_chance_is_the_exchangeable_split():
    assert harm.chance_harmed(1, 1, 1) == 0.5  # one discordant pair: harmed or helped, equally likely
    assert harm.chance_harmed(4, 4, 4) == pytest.approx(1 / 70)  # all four successes on none's side
    assert harm.chance_harmed(0, 4, 4) == 0 == harm.chance_harmed(8, 4, 4)
    # unconditional: a task that succeeds half the time, equal strategies, 4 trials each
    assert harm.expected_chance([0.5], 4) == pytest.approx((1 * 5 + 4 * 1) / 256)


def records(rows: list[tuple[str, str, int, bool]]) -> pd.DataFrame:
    return pd.DataFrame([{"benchmark": "b", "split": "s", "model": "m", "assembly": "", "strategy": st,
                          "task_id": t, "trial": k, "success": ok, "error": None} for st, t, k, ok in rows])


def test_lists_link_to_the_episodes_that_turned():
    rows = [("none", "1", 0, True), ("full", "1", 0, False), ("none", "2", 0, False), ("full", "2", 0, True),
            ("none", "3", 0, True), ("full", "3", 0, True)]
    [effects] = harm.per_cell(records(rows))
    assert list(effects.harmed) == ["1"] and list(effects.helped) == ["2"] and effects.unchanged == 1
    assert effects.harmed["1"] == (0, 1) and effects.helped["2"] == (2, 3)  # (none's episode, full's episode)
    assert effects.chance == pytest.approx(1.0)  # two discordant tasks, each harmed with probability 1/2
    assert harm.compare_url(effects.harmed["1"]) == "http://127.0.0.1:8765/compare?a=0&b=1#divergence"
    text = "\n".join(harm.lines([effects], viewer=harm.VIEWER_URL))
    assert "harmed 1" in text and "[1](http://127.0.0.1:8765/compare?a=0&b=1#divergence)" in text


def test_a_task_harmed_in_one_trial_of_four_is_noise():
    rows = [(s, "1", k, not (s == "full" and k == 0)) for s in ("none", "full") for k in range(4)]
    rows += [(s, "2", k, s == "none" or k == 3) for s in ("none", "full") for k in range(4)]  # 4-1
    effects = [e for e in harm.per_cell(records(rows)) if e.strategy == "full"][0]
    assert list(effects.harmed) == ["2"] and effects.trials == 4
    pair = effects.harmed["2"]
    assert pair[0] != pair[1]


def test_none_against_itself_lists_about_what_chance_says():
    """40 tasks, p = 0.55, none with 8 trials split 4 + 4, 60 seeds: the A/A harmed count averages the analytic
    chance figure, and so does the rule's own per-run chance estimate."""
    prof = world.PROFILES["strong"]
    empty = world.World("none", {}, {})
    tasks = [str(t) for t in range(40)]
    counts, estimates = [], []
    for seed in range(60):
        rows = world.simulate_records(prof, empty, {"none": {t: "" for t in tasks}},
                                      trial_seeds=[seed * 100 + i for i in range(8)])
        aa = [e for e in harm.per_cell(pd.DataFrame(rows)) if "(A/A)" in e.strategy][0]
        assert aa.trials == 4
        counts.append(len(aa.harmed))
        estimates.append(aa.chance)
    expected = harm.expected_chance([0.55] * 40, 4)
    assert 0.8 < expected < 2.0
    assert abs(sum(counts) / 60 - expected) < 3 * math.sqrt(expected / 60) + 0.1
    assert abs(sum(estimates) / 60 - expected) < 0.25


@pytest.fixture(scope="module")
def harmed_world(artifact, tmp_path_factory):
    """The world's artifact with half its lessons contradicted, the weakest first (docs/robustness.md)."""
    out = tmp_path_factory.mktemp("harm") / "contradict_50.jsonl"
    corrupt(artifact, out, Spec("contradict", 0.5, pick="low_support"))
    return out


def test_planted_harm_is_found_where_it_was_planted(harmed_world):
    prof = world.PROFILES["strong"]
    w = world.load_world(harmed_world)
    guidelines, meta = load_memory(harmed_world)
    tasks = [str(t) for t in meta["simulated"]["tasks"][:40]]
    blocks = {"none": {t: "" for t in tasks}, "full": {t: render_guidelines(guidelines) for t in tasks}}
    planted = {t for t in tasks if world.expected_p(prof, w, t, blocks["full"][t]) < prof.base}
    assert 10 <= len(planted) <= 30  # harm where corrupted lessons mislead, not everywhere
    listed = hits = aa_listed = 0
    chance = aa_chance = 0.0
    for seed in range(20):
        rows = world.simulate_records(prof, w, blocks, trial_seeds=[5000 + 10 * seed + i for i in range(4)])
        effects = harm.per_cell(pd.DataFrame(rows))
        full = next(e for e in effects if e.strategy == "full")
        aa = next(e for e in effects if "(A/A)" in e.strategy)
        listed, hits, chance = listed + len(full.harmed), hits + len(set(full.harmed) & planted), chance + full.chance
        aa_listed, aa_chance = aa_listed + len(aa.harmed), aa_chance + aa.chance
    assert hits / listed >= 0.8  # most listed tasks are planted ones (planted share of all tasks: below 0.8)
    assert len(planted) / 40 < 0.8 and listed > 2 * chance  # more than trial noise alone would list
    assert abs(aa_listed - aa_chance) < 3 * math.sqrt(aa_chance) + 1  # none vs itself: about chance


def test_the_links_open_the_viewers_compare_page_on_the_right_episodes(tmp_path):
    """The ids harm lists are the viewer's episode ids for the same runs: the compare page shows that task's
    none episode beside the strategy's, same trial, outcomes the other way round."""
    import json

    from analysis.tables import analyse
    from analysis.viewer.app import create_app

    runs = []
    for name, strategy, ok in (("a", "none", (True, True, False)), ("b", "full", (False, True, True))):
        run = tmp_path / name
        run.mkdir()
        rows = [{"run": name, "job": f"b/s/m/{strategy}", "benchmark": "b", "split": "s", "model": "m",
                 "strategy": strategy, "task_id": str(t), "trial": 0, "success": ok[t], "error": None}
                for t in range(3)]
        (run / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        runs.append(str(run))
    result = analyse(runs, n_boot=50)
    [full] = [e for e in harm.per_cell(result.records) if e.strategy == "full"]
    assert list(full.harmed) == ["0"] and list(full.helped) == ["2"]
    client = create_app(runs).test_client()
    page = client.get(harm.compare_url(full.harmed["0"], viewer="/").split("#")[0])
    assert page.status_code == 200
    text = page.get_data(as_text=True)
    assert "Task 0, trial 0" in text and "A: none" in text and "B: full" in text
    from analysis.tables import write

    assert "task_effects.md" in {p.name for p in write(result, tmp_path / "out", plot=False)}  # make tables
    table = (tmp_path / "out" / "task_effects.md").read_text()
    assert f"[0]({harm.compare_url(full.harmed['0'])})" in table and "| full " in table


def test_recommend_names_the_tasks_its_choice_harmed():
    from analysis.recommend import recommend

    rows = [{"benchmark": "b", "split": "s", "model": "m", "strategy": s, "task_id": str(t), "trial": 0,
             "success": (t < 20) if s == "none" else t not in (18, 19), "error": None, "prompt_tokens": 1000,
             "completion_tokens": 10, "run": "r", "run_dir": "r", "job": f"b/s/m/{s}"}
            for s in ("none", "full") for t in range(40)]
    [rec] = recommend(pd.DataFrame(rows).assign(assembly=""))
    assert rec.choice == "full"
    [line] = [s for s in rec.sentences if s.startswith("Harm:")]
    assert "`full` harmed 2 of 40 tasks that `none` solved (18, 19)" in line
    rows = [r | {"success": True} if r["strategy"] == "full" else r for r in rows]  # harms nothing: no sentence
    [rec] = recommend(pd.DataFrame(rows).assign(assembly=""))
    assert rec.choice == "full" and not any(s.startswith("Harm:") for s in rec.sentences)
