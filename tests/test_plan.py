"""`make plan` (analysis/plan.py) and the prices it uses (memory_kit/prices.py): nothing runs, nothing is called."""

from __future__ import annotations

import json

import pytest

from analysis import plan
from analysis.planning.plan_estimate import PRIORS
from memory_kit import prices
from strategies import render_guidelines
from memory_kit.budget import token_counter
from memory_kit.memory_file import load_memory

SAMPLE = "strategies/samples/tau2_sample.jsonl"


def facts(model="openai/gpt-4.1", tasks=("1", "2", "3", "4"), **extra):
    return {"benchmark": "tau2_retail", "split": "test", "trials": 1, "max_steps": 200, "placement": "after_policy",
            "judge_model": None, "needs_judge": False, "model": {"name": model, **extra}, "strategy_options": {},
            "memory": SAMPLE, "tasks": list(tasks), "gold_actions": {t: 2 * int(t) for t in tasks},
            "train_tasks": 10}


def test_prices_come_from_litellm_with_the_cache_discount_and_unknown_models_are_unpriced():
    gpt = prices.price_of("openai/gpt-4.1")
    assert gpt.source == "LiteLLM price map" and gpt.cached < gpt.input
    # 1000 prompt tokens of which 800 cached, 100 completion
    assert gpt.cost(1000, 100, cached=800) == pytest.approx(200 * gpt.input + 800 * gpt.cached + 100 * gpt.output)
    claude = prices.price_of("anthropic/claude-sonnet-4-5")
    assert claude.cache_write > claude.input  # Anthropic bills cache writes above the input price
    assert claude.cost(1000, 0, cached=0, cache_write=1000) == pytest.approx(1000 * claude.cache_write)
    assert prices.price_of("openai/no-such-model") is None and prices.fmt_usd(None) == "unpriced"


def test_a_config_price_overrides_and_is_checked():
    own = prices.price_of("openai/no-such-model", {"price_per_mtok_in": 1.0, "price_per_mtok_out": 4.0})
    assert own.source == "model config" and own.cost(1_000_000, 1_000_000) == pytest.approx(5.0)
    with pytest.raises(ValueError, match="price_per_mtok_out must be set"):
        prices.check_override({"price_per_mtok_in": 1.0})
    with pytest.raises(ValueError, match=">= 0"):
        prices.check_override({"price_per_mtok_in": -1, "price_per_mtok_out": 1})


def test_the_prior_counts_the_memory_block_from_the_artifact_and_states_its_band():
    cells, _ = plan.plan(facts(), ["none", "full"], trials=2)
    none, full = cells
    guidelines, _ = load_memory(SAMPLE)
    assert full.block == token_counter("openai/gpt-4.1")(render_guidelines(guidelines)) and none.block == 0
    assert none.episodes == full.episodes == 8  # 4 tasks x 2 trials
    # the same episodes plus the block at every step: exactly steps x block more prompt tokens
    steps = [2 * int(t) + PRIORS["tau2"]["steps_fixed"] for t in ("1", "2", "3", "4")]
    extra = full.episode.tokens["prompt"] - none.episode.tokens["prompt"]
    assert extra == pytest.approx(full.block * sum(steps) / 4)
    assert full.episode.band == (0.5, 2.0) and "prior" in full.episode.source
    assert full.cost() > none.cost() > 0


def test_an_unpriced_model_says_unpriced_never_zero():
    cells, found = plan.plan(facts(model="openai/no-such-model"), ["none"], trials=1)
    text = plan.report(facts(model="openai/no-such-model"), cells, found, 1, None, None, SAMPLE)
    assert "unpriced" in text and "$0.0000" not in text.split("total:")[1]


def _record(strategy, task, trial, error=None, **tokens):
    return {"run": "p", "job": f"tau2_retail/test/openai/gpt-4.1/{strategy}", "benchmark": "tau2_retail",
            "split": "test", "model": "openai/gpt-4.1", "strategy": strategy, "task_id": task, "trial": trial,
            "success": bool(tokens.pop("ok", False)), "error": error, "memory": SAMPLE, **tokens}


def test_resume_skips_recorded_episodes_but_not_infra_ones(tmp_path):
    rows = [_record("none", "1", 0), _record("none", "2", 0), _record("none", "3", 0, error="infra")]
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    cells, _ = plan.plan(facts(), ["none", "full"], trials=1, run_dir=str(tmp_path))
    assert [(c.strategy, c.episodes, c.total) for c in cells] == [("none", 2, 4), ("full", 4, 4)]
    # read as the runner reads it (harness/row.py): task 3's second attempt counts, a torn last line does not
    again = [_record("none", "3", 0) | {"attempt": 2}, _record("none", "4", 0) | {"attempt": 2}]
    with (tmp_path / "results.jsonl").open("a") as f:
        f.write(json.dumps(again[0]) + "\n" + json.dumps(again[1])[:40])
    cells, _ = plan.plan(facts(), ["none"], trials=1, run_dir=str(tmp_path))
    assert [(c.strategy, c.episodes, c.total) for c in cells] == [("none", 1, 4)]


def pilot_frame(tmp_path):
    from analysis import load_records

    rows = []
    for task in ("1", "2", "3", "4"):
        for trial in range(2):
            for strategy, mem, ok in (("none", 0, trial == 0), ("full", 300, True)):
                rows.append(_record(strategy, task, trial, steps=10, prompt_tokens=20_000 + mem * 10,
                                    memory_tokens=mem * 10, cached_tokens=10_000, completion_tokens=500,
                                    user_prompt_tokens=3000, user_cached_tokens=0, user_completion_tokens=100,
                                    judge_prompt_tokens=0, judge_completion_tokens=0, ok=ok))
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return load_records([tmp_path])


def test_a_pilot_gives_measured_tokens_and_with_delta_the_price_of_a_decision(tmp_path):
    pilot = pilot_frame(tmp_path)
    f = facts()
    cells, found = plan.plan(f, ["none", "full"], trials=2, pilot=pilot)
    none, full = cells
    # the pilot's own tasks: its figures as measured, the same artifact's memory tokens kept
    assert none.episode.tokens["prompt"] == pytest.approx(20_000)
    assert full.episode.tokens["prompt"] == pytest.approx(23_000)
    assert none.episode.tokens["cached"] == pytest.approx(10_000)  # the pilot's cached share
    assert full.episode.band == (1.0, 1.0) and full.episode.source.startswith("pilot")
    text = plan.report(f, cells, found, 2, pilot, 5.0, SAMPLE)
    need, _ = plan.decision(pilot, ["none", "full"], 2, 5.0)
    assert need and f"To decide at margin 5 points: {need} tasks × 2 trials" in text
    per_task = 2 * sum(sum(c.usd.values()) for c in cells)
    assert plan.fmt_usd(need * per_task) in text


def test_memory_building_is_priced_when_the_artifact_does_not_exist(tmp_path):
    f = facts()
    cells, found = plan.plan(f, ["none", "full"], trials=1, memory=str(tmp_path / "later.jsonl"))
    built = plan.build_estimate(f, cells, found, str(tmp_path / "later.jsonl"))
    assert built["tasks"] == 10 and built["usd"] > 10 * cells[0].usd["agent"]
    assert plan.build_estimate(f, cells, found, SAMPLE) is None  # it exists: nothing to build


def test_cli_bad_input_exits_2(tmp_path, capsys):
    path = tmp_path / "facts.json"
    path.write_text(json.dumps(facts()))
    assert plan.main(["--facts", str(path), "--strategies", "none", "--pilot", str(tmp_path / "nope")]) == 2
    assert "no such run directory" in capsys.readouterr().err
    assert plan.main(["--facts", str(tmp_path / "missing.json"), "--strategies", "none"]) == 2


def test_cli_prints_per_cell_episodes_and_total(tmp_path, capsys):
    path = tmp_path / "facts.json"
    path.write_text(json.dumps(facts()))
    assert plan.main(["--facts", str(path), "--strategies", "none,full", "--trials", "3"]) == 0
    out = capsys.readouterr().out
    assert "12/12" in out and "total: 24 episodes to run" in out and "LiteLLM price map" in out


def test_the_report_fits_160_columns_and_names_each_cells_token_source(tmp_path):
    from analysis.fmt import WIDTH

    pilot = pilot_frame(tmp_path)
    f = facts()
    cells, found = plan.plan(f, ["none", "full", "core_retrieval"], trials=2, pilot=pilot)
    text = plan.report(f, cells, found, 2, pilot, 5.0, str(tmp_path / "not-built-yet.jsonl"))
    assert max(map(len, text.splitlines())) <= WIDTH, text
    sources = [line for line in text.splitlines() if line.startswith("tokens per episode of ")]
    assert len(sources) == len({c.episode.source for c in cells}) >= 2  # one line per distinct source
    for c in cells:
        assert any(c.strategy in line and c.episode.source in line for line in sources)
    prior, _ = plan.plan(f, ["none", "full"], trials=1)
    assert "tokens per episode from: prior" in plan.report(f, prior, found, 1, None, None, SAMPLE)


def test_the_plan_prices_each_design_from_its_own_declaration(monkeypatch):
    from analysis.planning.plan_estimate import memory_block_tokens
    from dataclasses import make_dataclass

    from strategies import Declaration, StrategyBase, registry
    from strategies.plan_block import PlanEstimate

    class Declares(StrategyBase):
        name = "plan_declares"

        def deliver(self, task, step):
            raise AssertionError("the plan never builds a strategy")

        declaration = Declaration(options=make_dataclass("N", [("n", int, 1)], frozen=True),
                                  plan=lambda memory, count, opts: PlanEstimate(float(count("x " * opts.n)), "declared",
                                                                                {"judge": 1.0}))

    class Silent(Declares):
        name = "plan_silent"
        declaration = Declaration()

    monkeypatch.setattr(registry._REGISTRY, "extra", {**registry._REGISTRY.extra, "plan_declares": Declares,
                                                       "plan_silent": Silent})
    count = token_counter("openai/gpt-4.1")
    assert memory_block_tokens("plan_declares", None, "openai/gpt-4.1", {"n": 50}) == (count("x " * 50), "declared")
    full, note = memory_block_tokens("plan_silent", SAMPLE, "openai/gpt-4.1", {})  # undeclared: the upper bound
    assert full == count(render_guidelines(load_memory(SAMPLE)[0])) and note == "full block (upper bound)"
    assert memory_block_tokens("none", SAMPLE, "openai/gpt-4.1", {}) == (0.0, "no memory")
