"""Learning curves of online strategies: ace_online's records say where in its trial stream each episode ran and
how big the playbook it saw was; the analysis draws rolling success (with a Wilson band) and memory size vs
episodes seen, per stream, in `make tables` and the report."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
from ace_fakes import MODEL, install_scripted_roles

from analysis.report import render
from analysis.statistics.stats import wilson_ci
from analysis.tables import analyse, write
from analysis.views import curves
from analysis.views.plots import learning_curves
from strategies import TaskView, Trajectory
from strategies.ace.adapt import AceSettings, Adapter
from strategies.ace.llm import JsonLLM
from strategies.ace.playbook import Playbook
from strategies.ace.online import AceOnline
from memory_kit.budget import token_counter


def episode(task_id: str, trial: int) -> Trajectory:
    return Trajectory(task=TaskView("tau2_retail", task_id, "t"), messages=({"role": "assistant", "content": "ok"},),
                      reward=1.0, success=True, episode=f"{task_id}#{trial}")


def test_ace_online_records_its_stream_position_and_playbook_size(tmp_path):
    roles = install_scripted_roles()
    adapter = Adapter(reflector=JsonLLM(MODEL), curator=JsonLLM(MODEL), count_tokens=token_counter("gpt-4o"),
                      settings=AceSettings(dedup_threshold=None))
    strategy = AceOnline(Playbook(), adapter=adapter, artifacts_dir=tmp_path, meta={"source": None})
    first, other = strategy.for_trial(0), strategy.for_trial(1)
    start = first.record_facts(episode("1", 0))
    assert start["episodes_seen"] == 0 and start["memory_size"] == 0
    for task in ("1", "2"):
        roles.queue("reflector", {"error_analysis": "", "key_insight": "k", "bullet_tags": []})
        roles.queue("curator", {"operations": [{"type": "ADD", "section": "others", "content": f"Lesson {task}."}]})
        strategy.learn(episode(task, 0))
    facts = first.record_facts(episode("3", 0))
    assert facts["episodes_seen"] == 2 and facts["memory_size"] == 2
    # trial 1 is its own stream: it has seen nothing yet, whatever trial 0 learned
    assert other.record_facts(episode("1", 1))["episodes_seen"] == 0
    assert other.record_facts(episode("1", 1))["memory_size"] == 0


def online_records(streams: dict[int, list[bool]]) -> list[dict]:
    rows = []
    for trial, outcomes in streams.items():
        for i, ok in enumerate(outcomes):
            rows.append({"run": "r", "job": "tau2_retail/test/m/ace_online", "benchmark": "tau2_retail",
                         "split": "test", "model": "m", "strategy": "ace_online", "task_id": str(i), "trial": trial,
                         "success": ok, "reward": float(ok), "error": None, "episodes_seen": i,
                         "memory_size": 3 * i, "prompt_tokens": 100, "completion_tokens": 10, "memory_tokens": 5})
    rows += [{**r, "strategy": "none", "job": "tau2_retail/test/m/none", "episodes_seen": None, "memory_size": None}
             for r in rows]
    return rows


def test_rolling_rate_and_band_per_stream(tmp_path):
    streams = {0: [False] * 10 + [True] * 10, 1: [True, False] * 10}
    records = pd.DataFrame(online_records(streams)).assign(run_dir="runs/r")
    points = curves.learning_points(records, window=5)
    assert set(points["strategy"]) == {"ace_online"}  # `none` does not learn: no curve
    zero = points[points["trial"] == 0].set_index("episodes_seen")
    assert zero.loc[4, "rate"] == 0.0 and zero.loc[19, "rate"] == 1.0 and zero.loc[12, "rate"] == 0.6
    assert (zero.loc[12, "lo"], zero.loc[12, "hi"]) == wilson_ci(3, 5)
    assert zero.loc[19, "lo"] < 1.0  # five successes in a row still leave doubt (no collapsed [1, 1] band)
    one = points[points["trial"] == 1].set_index("episodes_seen")
    assert one.loc[19, "rate"] == 0.4 and one.loc[19, "memory_size"] == 57  # streams kept apart
    lo, hi = wilson_ci(3, 5)
    assert 0.2 < lo < 0.3 and 0.85 < hi < 0.9  # the textbook Wilson interval for 3/5


def test_tables_and_report_draw_the_curves(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    rows = online_records({0: [True, False, True, True] * 5, 1: [False, True] * 10})
    (run / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = analyse([str(run)], n_boot=100)
    written = {p.name for p in write(result, tmp_path / "out")}
    assert "learning_curves.png" in written and (tmp_path / "out" / "learning_curves.png").stat().st_size > 5000
    assert "alt='learning_curves'" in render(result, [str(run)])
    # records of strategies that do not learn online: no figure
    assert learning_curves(result.records[result.records["strategy"] == "none"], tmp_path / "none") == []
    assert not (tmp_path / "none").exists()
