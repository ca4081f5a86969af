"""budget_usd against a FAKE priced provider on 127.0.0.1 (tests/fault_server.py, usage in every reply; the
price comes from model.price_per_mtok_*): the run stops within the episodes in flight of the cap, says so,
records it in the manifest, and a rerun with a higher budget completes exactly the remaining episodes."""

from __future__ import annotations

import json

import pytest

from conftest import compose, main_in_process, read_records
from fault_server import FaultServer, scripts_for
from harness.runner import run_job
from harness.runner.budget import episode_cost

TASKS, CONCURRENCY = 8, 2
PRICE = ["model.price_per_mtok_in=100", "model.price_per_mtok_out=400"]  # USD per 1M tokens: visible sums


def config(runs_dir, name, api_base, *extra):
    return compose("model=litellm", "model.name=openai/fault-agent", f"+model.kwargs.api_base={api_base}",
                   "model.api_key_env=LLMCRED", "model.max_retries=0", *PRICE, f"benchmark.limit={TASKS}",
                   f"concurrency={CONCURRENCY}", "progress=false", f"runs_dir={runs_dir}", f"run_name={name}", *extra)


@pytest.fixture
def cred(monkeypatch):
    monkeypatch.setenv("LLMCRED", "budget-test-cred-0123456789")


def spent(run_dir):
    return sum(episode_cost(r) for r in read_records(run_dir))


def test_the_budget_stops_within_one_wave_and_a_higher_one_resumes(runs_dir, cred, capsys):
    scripts, scenarios = scripts_for(config(runs_dir, "x", "http://unused"))
    with FaultServer(scripts, scenarios) as server:
        run_job(config(runs_dir, "free", server.api_base))  # no budget: what every episode costs
        costs = [episode_cost(r) for r in read_records(runs_dir / "free")]
        assert len(costs) == TASKS and all(c and c > 0 for c in costs)  # priced from the config, cached or not
        budget = 3.5 * sum(costs) / len(costs)

        first = run_job(config(runs_dir, "capped", server.api_base, f"budget_usd={budget}"))
        capped = read_records(runs_dir / "capped")
        assert 0 < len(capped) < TASKS and first["ran"] == len(capped)
        # never more over the cap than the episodes in flight
        assert spent(runs_dir / "capped") <= budget + CONCURRENCY * max(costs)
        err = capsys.readouterr().err
        assert f"stopped at budget: ${spent(runs_dir / 'capped'):.4f} of ${budget:.2f}, {len(capped)} of {TASKS} " \
               "episodes" in err
        job = next(iter(json.loads((runs_dir / "capped" / "manifest.json").read_text())["jobs"].values()))
        assert job["budget"]["stopped"] is True and job["budget"]["episodes_done"] == len(capped)

        again = run_job(config(runs_dir, "capped", server.api_base, f"budget_usd={100 * budget}"))
    records = read_records(runs_dir / "capped")
    assert again["ran"] == TASKS - len(capped) and again["skipped"] == len(capped)
    assert sorted(r["task_id"] for r in records) == sorted(r["task_id"] for r in read_records(runs_dir / "free"))
    job = next(iter(json.loads((runs_dir / "capped" / "manifest.json").read_text())["jobs"].values()))
    assert job["budget"]["stopped"] is False and job["budget"]["episodes_done"] == TASKS


def _sweep(tmp_path, *overrides):
    return main_in_process("harness.run", "model=litellm", "benchmark.limit=1", f"runs_dir={tmp_path}", "run_name=b",
                           "model.api_key_env=LLMCRED", *overrides, env={"LLMCRED": "x" * 20})


def test_an_unpriced_model_with_a_budget_exits_2_before_anything_runs(tmp_path):
    # a name no other test prices: a job's price override is taught to LiteLLM for the whole process
    proc = _sweep(tmp_path, "model.name=openai/unpriced-budget-probe", "budget_usd=1")
    assert proc.returncode == 2 and "openai/unpriced-budget-probe has no price" in proc.stderr
    assert not (tmp_path / "b").exists()
    half = _sweep(tmp_path, "model.name=openai/unpriced-budget-probe", "model.price_per_mtok_in=1")
    assert half.returncode == 2 and "price_per_mtok_out must be set" in half.stderr


def test_a_strategys_own_calls_count_and_an_unpriced_one_stops_the_budget():
    from harness.row import Row

    agent = {"task_id": "t", "trial": 0, "success": True, "steps": 2, "cost_usd": 0.5, "user_prompt_tokens": 0}
    assert episode_cost(Row.from_dict(agent)) == 0.5  # no strategy call: nothing more to price
    ranked = {**agent, "strategy_calls": 3, "strategy_cost_usd": 0.25}
    assert episode_cost(Row.from_dict(ranked)) == 0.75
    assert episode_cost(Row.from_dict({**ranked, "strategy_cost_usd": None})) is None  # calls made, price unknown


def test_re_runs_and_updates_are_charged_and_the_next_episode_sees_them():
    from harness.row import Row
    from harness.runner.budget import Budget

    before = [Row.from_dict({"task_id": "t", "trial": 0, "success": True, "steps": 1, "cost_usd": 1.0})]
    rerun = [Row.from_dict({"task_id": "t", "trial": 0, "success": True, "steps": 1, "cost_usd": 1.0, "reflection_rerun": 1})]
    budget = Budget(3.5, before + rerun)  # what the run directory spent: its episode and its re-run
    assert budget.spent == 2.0 and budget.admit()  # 2 + 1 (mean of a priced episode) <= 3.5
    budget.finish(before[0])
    budget.charge(0.75)  # an online update's Reflector and Curator
    assert budget.spent == 3.75 and not budget.admit()
    unknown = Budget(100, before)
    unknown.charge(None)  # a re-run whose price is unknown: the cap cannot be kept, nothing more starts
    assert not unknown.admit()
