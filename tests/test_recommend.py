"""analysis.recommend and analysis.runs.build_cost.

`make recommend` on the SIMULATED world must pick what the planted profile implies: full for `strong`
(memory helps and the gap to the others is large), never full for `small` (a long block hurts); where the
planted gap is within the margin it may say "No decision yet". Calibration: tests/test_decision_calibration.py.
Records come from harness.scripted.simulated_world.simulate_records (exactly what a real sweep writes for success, see
tests/test_simulated_world.py); their token fields here are SYNTHETIC (8 steps x (3,000 + memory tokens)),
only so that the cheaper strategy is the one with the smaller block, as in a real run.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest

from analysis import recommend
from analysis.runs import build_cost
from harness.scripted import simulated_world as world
from strategies import render_guidelines
from memory_kit.memory_file import load_memory



def _records(artifact, profile: str, seed: int = 0, trials: int = 4) -> pd.DataFrame:
    guidelines, meta = load_memory(artifact)
    tasks = meta["simulated"]["tasks"][:40]
    select = {"none": [], "core": [g for g in guidelines if g.support >= 3], "full": guidelines}
    blocks = {s: {t: render_guidelines(gs) for t in tasks} for s, gs in select.items()}
    df = pd.DataFrame(world.simulate_records(world.PROFILES[profile], world.load_world(artifact), blocks,
                                             [seed * 1000 + j for j in range(trials)]))
    df["prompt_tokens"] = 8 * (3000 + df["memory_tokens"])  # synthetic, see the module docstring
    df["completion_tokens"] = 400
    df["memory"] = str(artifact)
    df["run_dir"] = "nowhere"
    return df


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_strong_profile_recommends_full(artifact, seed):
    [rec] = recommend.recommend(_records(artifact, "strong", seed))
    assert rec.best == "full" and rec.choice == "full", rec.sentences
    assert rec.candidates == ["full"]  # the others are not shown to be within the margin
    text = "\n".join(rec.sentences)
    assert "Recommended: full" in text and "per 1,000 tasks" in text and "SIMULATED" in text
    assert "none: not shown to be within 5 points" in text


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_small_profile_never_recommends_full(artifact, seed):
    [rec] = recommend.recommend(_records(artifact, "small", seed))
    assert rec.choice in ("none", "core", None) and "full" not in rec.candidates, rec.sentences
    assert rec.per_task["none"] < rec.per_task["core"] < rec.per_task["full"]
    if rec.choice is None:  # none vs the core set is too close for 40 x 4 to settle at 5 points: it says so
        assert rec.more_tasks and rec.more_tasks > 0
        assert any(s.startswith("No decision yet") for s in rec.sentences)
    else:
        assert any(s.startswith(f"{rec.choice}: non-inferior at margin 5") for s in rec.sentences)


def test_pass_k_needs_enough_trials(artifact):
    with pytest.raises(ValueError, match="Pass\\^4 needs >= 4 trials"):
        recommend.recommend(_records(artifact, "strong", trials=2), k=4)
    [rec] = recommend.recommend(_records(artifact, "strong", trials=4), k=4)
    assert "Pass^4" in rec.sentences[0]


def test_cli_errors_exit_2(tmp_path):
    assert recommend.main([str(tmp_path / "missing")]) == 2


def test_build_cost_from_build_json_ace_history_and_online_history(tmp_path):
    mem = tmp_path / "mem" / "memory.jsonl"
    mem.parent.mkdir()
    mem.write_text('{"_meta": {"kind": "learned"}}\n')
    (mem.parent / "build.json").write_text(json.dumps(
        {"extractor_usage": {"calls": 3, "prompt_tokens": 1000, "completion_tokens": 200, "cost_usd": 0.5}}))
    playbook = tmp_path / "ace" / "playbook.jsonl"
    playbook.parent.mkdir()
    playbook.write_text('{"_meta": {"kind": "ace_playbook"}}\n')
    playbook.with_name("playbook.history.jsonl").write_text("\n".join(json.dumps(r) for r in [
        {"update": 1, "usage": {"reflector": {"prompt_tokens": 100, "completion_tokens": 10},
                                "curator": {"prompt_tokens": 50, "completion_tokens": 5}}},
        {"update": 2, "usage": {"reflector": {"prompt_tokens": 100, "completion_tokens": 10}}}]) + "\n")
    run = tmp_path / "run"
    job = "tau2_retail/test/m/ace_online"
    online = run / "memory" / build_cost._slug(job) / "history.jsonl"
    online.parent.mkdir(parents=True)
    online.write_text(json.dumps({"update": 1, "stream": 0, "usage": {"reflector": {"prompt_tokens": 7,
                                                                            "completion_tokens": 3}}}) + "\n")
    trimmed = run / "memory" / build_cost._slug("tau2_retail/test/m/ace") / "history.jsonl"
    trimmed.parent.mkdir(parents=True)  # an offline playbook trimmed at load: no stream learned, no build cost here
    trimmed.write_text(json.dumps({"update": 0, "event": "load", "bullets": 3, "dropped": ["a"]}) + "\n")
    sample = tmp_path / "sample.jsonl"
    sample.write_text('{"_meta": {"kind": "sample"}}\n')

    assert build_cost.build_cost("none", None)["build_tokens"] == 0
    got = build_cost.build_cost("full", str(mem))
    assert (got["build_tokens"], got["build_cost_usd"]) == (1200, 0.5)
    got = build_cost.build_cost("ace", str(playbook))
    assert got["build_tokens"] == 275 and pd.isna(got["build_cost_usd"])  # ACE reports tokens, not cost
    assert build_cost.build_cost("ace_online", None, str(run), job)["build_tokens"] == 10
    for label in ("ace_online (GT)", "ace_online (GT) [IN-SAMPLE]"):  # analysis.runs.load's labels: the same learner
        assert build_cost.build_cost(label, None, str(run), job)["build_tokens"] == 10
        assert build_cost.build_cost(label, None, str(run), job, billed_per_episode=True)["build_tokens"] == 0
    assert pd.isna(build_cost.build_cost("full", str(sample))["build_tokens"])  # unknown is never 0
    assert build_cost.build_cost("ace", str(playbook), str(run), "tau2_retail/test/m/ace")["build_tokens"] == 275

    rows = [{"benchmark": "b", "split": "test", "model": "m", "strategy": s, "task_id": str(t), "trial": 0,
             "success": True, "error": None, "run": "r", "prompt_tokens": 100, "completion_tokens": 0,
             "memory": str(mem) if s == "full" else None, "run_dir": str(run), "job": f"b/test/m/{s}"}
            for s in ("none", "full") for t in range(4)]
    df = pd.DataFrame(rows)
    from analysis import summarize

    out = build_cost.add_build_cost(summarize(df, n_boot=50), df, amortise_over=None).set_index("strategy")
    assert out.loc["full", "amortised_over"] == 4 and out.loc["full", "build_tokens/task"] == 300
    assert out.loc["full", "tokens+build/task"] == 400 and out.loc["none", "tokens+build/task"] == 100
    out = build_cost.add_build_cost(summarize(df, n_boot=50), df, amortise_over=1200).set_index("strategy")
    assert out.loc["full", "build_tokens/task"] == 1


def test_unpriced_runs_name_the_best_qualifying_and_say_why(artifact):
    [rec] = recommend.recommend(_records(artifact, "strong"), by="cost")  # simulated records carry no cost
    assert rec.choice == "full"
    assert any("no strategy can be ranked on price" in s for s in rec.sentences)


def test_by_cost_prices_every_role_as_the_tables_do(artifact):
    """--by cost: agent + user simulator + judge per task (analysis.runs.costs), not the agent's calls alone. The
    agent costs the same under every strategy here; only the user simulator's cost tells them apart."""
    df = _records(artifact, "strong", 0)
    df["cost_usd"] = 0.01
    df["user_cost_usd"] = df["strategy"].map({"none": 0.001, "core": 0.002, "full": 0.5})
    df["judge_cost_usd"] = 0.0
    [rec] = recommend.recommend(df, by="cost")
    assert rec.per_task["full"] == pytest.approx(0.51) and rec.per_task["none"] == pytest.approx(0.011)
