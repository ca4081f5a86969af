"""Delivery audit on hand-made records: never-delivered ids and presence in successful vs failed tasks."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from analysis.audit import never_delivered, outcome_by_guideline
from conftest import unwrapped


@pytest.fixture()
def memory(tmp_path):
    path = tmp_path / "mem.jsonl"
    path.write_text("".join(json.dumps({"id": i, "text": f"rule {i}"}) + "\n" for i in ("a", "b", "c", "d")))
    return str(path)


def rec(task, success, delivered, strategy="core_retrieval", error=None, memory=None):
    return {"run_dir": "r", "job": f"j/{strategy}", "strategy": strategy, "task_id": task, "trial": 0,
            "success": success, "error": error, "delivered": delivered, "memory": memory}


def test_presence_and_never_delivered(memory):
    df = pd.DataFrame([
        rec("1", True, [["a"], ["a", "b"]], memory=memory),
        rec("2", False, [["a"], ["a"]], memory=memory),
        rec("3", True, [[], ["c"]], memory=memory),
        rec("4", False, [["b"]], memory=memory, error="infra"),  # excluded everywhere
        rec("1", True, [[]], strategy="none", memory=memory),
    ])
    assert never_delivered(df) == {("r", "j/core_retrieval", "core_retrieval"): ["d"]}
    table = outcome_by_guideline(df).set_index("guideline")
    assert table.loc["a", ["present", "present_success", "present_failed"]].tolist() == [2, 1, 1]
    assert table.loc["a", "success_rate_present"] == 0.5 and table.loc["a", "success_rate_absent"] == 1.0
    assert table.loc["b", ["present", "present_success"]].tolist() == [1, 1]  # the infra record does not count
    assert table.loc["c", "success_rate_absent"] == 0.5
    assert "d" not in table.index


def test_dropped_by_budget_is_told_apart_from_never_selected(memory, capsys, tmp_path):
    from analysis.audit import main, split_never_delivered

    rows = [rec("1", True, [["a"], ["a"]], memory=memory), rec("2", False, [["a", "b"]], memory=memory)]
    rows[0]["dropped"] = [["c"], ["c", "b"]]
    rows[1]["dropped"] = [["c"]]
    df = pd.DataFrame(rows)
    assert split_never_delivered(df) == {("r", "j/core_retrieval", "core_retrieval"): (["c"], ["d"])}
    run = tmp_path / "run"
    run.mkdir()
    (run / "results.jsonl").write_text("".join(json.dumps({k: v for k, v in r.items() if k != "run_dir"}) + "\n"
                                               for r in rows))
    assert main([str(run)]) == 0
    out = capsys.readouterr().out
    assert "dropped by budget (1): c" in out and "never selected (1): d" in out


def test_the_printout_fits_160_columns_and_a_missing_artifact_is_one_line(tmp_path, capsys):
    from analysis.audit import main
    from analysis.fmt import WIDTH

    ids = [f"sim-task-{i}-a-long-guideline-identifier" for i in range(60)]
    path = tmp_path / "mem.jsonl"
    path.write_text("".join(json.dumps({"id": i, "text": f"rule {i}"}) + "\n" for i in ids))
    job = "tau2_retail/test/memdeliv-simulated/strong/core_retrieval"
    rows = [{"job": job, "strategy": "core_retrieval", "task_id": str(t), "trial": 0, "success": t % 2 == 0,
             "error": None, "delivered": [ids[t:t + 5]], "memory": str(path)} for t in range(20)]
    run = tmp_path / "run"
    run.mkdir()
    (run / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert main([str(run)]) == 0
    out = capsys.readouterr().out
    assert max(map(len, out.splitlines())) <= WIDTH, out
    assert f"never selected (36): {ids[24]}" in out and ids[-1] in out  # every id, wrapped, none cut
    [first] = [line.split() for line in out.splitlines() if line.split()[:1] == [ids[0]]]
    assert first == [ids[0], "1", "1", "0", "100.0%", "47.4%"]  # present, succeeded, failed, success if present/absent
    path.unlink()
    assert main([str(run)]) == 2
    err = unwrapped(capsys.readouterr().err)
    assert len(err.strip().splitlines()) == 1 and f"memory file not found: {path}" in err
