"""USD in the results (analysis/runs/costs.py): per task and per successful task, by role, the build amortised, the
cost-vs-success plot, and rows a budget stopped marked `incomplete (budget)`."""

from __future__ import annotations

import json

import pytest

from analysis import tables
from analysis.runs.costs import INCOMPLETE
from analysis.views import displays


def _rows(strategy, n, ok, agent, user, judge, job_suffix=""):
    rows = []
    for t in range(n):
        rows.append({"run": "c", "job": f"tau2_retail/test/openai/gpt-4.1/{strategy}{job_suffix}",
                     "benchmark": "tau2_retail", "split": "test", "model": "openai/gpt-4.1", "strategy": strategy,
                     "task_id": str(t), "trial": 0, "success": t < ok, "error": None, "steps": 3,
                     "prompt_tokens": 1000, "completion_tokens": 100, "memory_tokens": 0, "cached_tokens": 0,
                     "cost_usd": agent, "user_cost_usd": user, "judge_cost_usd": judge, "memory": None})
    return rows


def _by_strategy(shown):
    """A display table indexed by strategy (fewer than 20 tasks: the label carries ` *`)."""
    return shown.assign(strategy=shown["strategy"].str.removesuffix(" *")).set_index("strategy")


def _run(tmp_path, rows, manifest=None):
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    if manifest:
        (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    return tables.analyse([str(tmp_path)], n_boot=200)


def test_usd_per_task_and_per_success_by_role(tmp_path):
    result = _run(tmp_path, _rows("none", 4, 2, 0.03, 0.01, 0.002) + _rows("full", 4, 0, 0.05, 0.01, None))
    s = result.summary.set_index("strategy")
    assert s.loc["none", "usd/task"] == pytest.approx(0.042)
    assert s.loc["none", "usd_agent/task"] == pytest.approx(0.03) and s.loc["none", "usd_judge/task"] == pytest.approx(0.002)
    assert s.loc["none", "usd/success"] == pytest.approx(0.042 / 0.5)
    # an unpriced role makes the total unknown, never a partial sum
    assert s.loc["full", "usd_agent/task"] == pytest.approx(0.05) and s.isna().loc["full", "usd/task"]
    wide = _by_strategy(displays.strategies_display(result.summary))
    assert wide.loc["none", "USD/task"] == "$0.0420" and wide.loc["none", "USD/success"] == "$0.0840"
    assert wide.loc["full", "USD/task"] == "n/a" and wide.loc["none", "USD judge/task"] == "$0.0020"
    compact = _by_strategy(displays.compact_display(result.summary))
    assert compact.loc["none", "cost"] == "$0.0420"


def test_no_success_and_the_cost_plot(tmp_path):
    result = _run(tmp_path, _rows("none", 4, 0, 0.03, 0.0, 0.0) + _rows("full", 4, 3, 0.05, 0.0, 0.0))
    wide = _by_strategy(displays.strategies_display(result.summary))
    assert wide.loc["none", "USD/success"] == "no successes"
    written = tables.write(result, tmp_path / "analysis")
    assert tmp_path / "analysis" / "success_vs_cost.png" in written
    assert (tmp_path / "analysis" / "success_vs_tokens.png").is_file()


def test_a_budget_stopped_job_is_marked_incomplete(tmp_path):
    rows = _rows("none", 4, 2, 0.03, 0.0, 0.0) + _rows("full", 2, 1, 0.05, 0.0, 0.0)
    manifest = {"jobs": {"tau2_retail/test/openai/gpt-4.1/full": {"budget": {"stopped": True}},
                         "tau2_retail/test/openai/gpt-4.1/none": {"budget": {"stopped": False}}}}
    result = _run(tmp_path, rows, manifest)
    compact = _by_strategy(displays.compact_display(result.summary))
    assert compact.loc["full", "tasks×k"] == f"2×1 {INCOMPLETE}" and compact.loc["none", "tasks×k"] == "4×1"
    wide = _by_strategy(displays.strategies_display(result.summary))
    assert wide.loc["full", "status"] == INCOMPLETE and wide.loc["none", "status"] == "-"
