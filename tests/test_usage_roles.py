"""Usage by role as data (issue 34): a role that no harness file names (a plugin's `critic`), ledgered through
`Ledger.add_call`, is in the row, in the budget's cost and in analysis's cost table, with nothing else edited.
FAKE usage figures, no model."""

from __future__ import annotations

import pytest

from analysis import tables
from analysis.views import displays
from harness import ledger
from harness.records import EpisodeRecord, RowParts, build_row
from harness.row import Row
from harness.runner.budget import episode_cost
from harness.serving.model_client import Usage
from harness.store import RunStore


def usage(prompt: int, completion: int, cost: float | None) -> Usage:
    return Usage(prompt_tokens=prompt, completion_tokens=completion, cached_tokens=None, cost_usd=cost, latency_s=0.0)


def episode_row(strategy: str, task: str, critic_cost: float | None) -> Row:
    with ledger.episode() as spent:
        spent.add_agent_step(usage(1000, 100, 0.03), 0, ())
        spent.add_user_call(usage(200, 20, 0.01))
        if critic_cost is not None:  # the made-up role: two calls
            spent.add_call("critic", usage(40, 5, critic_cost / 2))
            spent.add_call("critic", usage(40, 5, critic_cost / 2))
    record = EpisodeRecord(task_id=task, success=True, reward=1.0, termination="user_stop", error=None,
                           error_detail=None, ledger=spent.record_fields(), wall_s=1.0, task_text="")
    job = {"schema": 2, "run": "roles", "job": f"tau2_retail/test/m/{strategy}", "benchmark": "tau2_retail",
           "split": "test", "model": "m", "strategy": strategy, "memory": None}
    return build_row(RowParts(job, 0, record, seed=1))


def test_a_plugin_role_reaches_the_row_the_budget_and_the_cost_table(tmp_path):
    row = episode_row("full", "1", 0.5)
    assert row.usage["critic"] == {"prompt": 80, "cached": None, "completion": 10, "cost": 0.5, "calls": 2}
    assert list(row.usage) == ["agent", "user", "judge", "critic"]  # built-in roles first, then the plugin's
    assert Row.from_json(row.to_json()).usage == row.usage  # on disk and back
    assert episode_cost(row) == pytest.approx(0.03 + 0.01 + 0.5)  # the budget counts it
    assert episode_cost(episode_row("full", "1", None)) == pytest.approx(0.04)

    store = RunStore(tmp_path)
    for task in ("1", "2"):
        store.append(episode_row("none", task, None), attempt=1)
        store.append(episode_row("full", task, 0.5), attempt=1)
    result = tables.analyse([str(tmp_path)], n_boot=20)
    s = result.summary.set_index("strategy")
    assert s.loc["full", "usd_critic/task"] == pytest.approx(0.5) and s.loc["none", "usd_critic/task"] == 0
    assert s.loc["full", "critic_calls/task"] == 2 and s.loc["full", "usd/task"] == pytest.approx(0.54)
    shown = displays.strategies_display(result.summary).set_index("strategy")
    assert shown.loc["full *", "USD critic/task"] == "$0.5000" and shown.loc["full *", "critic calls/task"] == \
        "2.00 (90 tokens)"
