"""Append-only results: resume keys, torn last lines, corruption, redaction."""

from __future__ import annotations

import json

import pytest

from harness.row import Row
from harness.runner.job_rows import JobRows
from harness.secrets import REDACTED
from harness.store import RunStore, RunStoreError, redact


def rec(task: str, trial: int, job: str = "j") -> Row:
    return Row(job=job, task_id=task, trial=trial, success=True, reward=1.0)


def done(store: RunStore, job: str) -> set:
    return JobRows(job, store.read(), retry_infra=False).done


def test_completed_keys_per_job(tmp_path):
    store = RunStore(tmp_path)
    for r in (rec("1", 0), rec("1", 1), rec("2", 0, job="other")):
        store.append(r)
    assert done(store, "j") == {("1", 0), ("1", 1)}
    assert done(store, "other") == {("2", 0)}


def test_torn_last_line_is_cut_and_redone(tmp_path):
    store = RunStore(tmp_path)
    store.append(rec("1", 0))
    with open(store.results_path, "ab") as fh:  # what kill -9 in the middle of a write leaves
        fh.write(b'{"job": "j", "task_id": "2", "tri')
    assert done(store, "j") == {("1", 0)}
    assert store.results_path.read_bytes().endswith(b"\n")
    store.append(rec("2", 0))
    lines = store.results_path.read_text().splitlines()
    assert [json.loads(x)["task_id"] for x in lines] == ["1", "2"]


def test_corrupt_middle_line_is_an_error_with_location(tmp_path):
    store = RunStore(tmp_path)
    store.append(rec("1", 0))
    with open(store.results_path, "ab") as fh:
        fh.write(b"not json\n")
    store.append(rec("2", 0))
    with pytest.raises(RunStoreError, match=r"results.jsonl:2: corrupt record"):
        store.read()


def test_job_identity_change_is_refused(tmp_path):
    store = RunStore(tmp_path)
    store.open_job("j", {"a": 1}, {"model": "m1"})
    store.open_job("j", {"a": 2}, {"model": "m1"})  # same identity: resume is fine
    with pytest.raises(RunStoreError, match="different setup"):
        store.open_job("j", {"a": 1}, {"model": "m2"})


def test_redaction_by_key_env_value_and_shape(monkeypatch):
    monkeypatch.setenv("MY_PROVIDER_API_KEY", "plain-secret-value-123")
    out = redact({"kwargs": {"api_key": "x-anything", "max_tokens": 5, "api_key_env": "MY_PROVIDER_API_KEY"},
                  "note": "used plain-secret-value-123 and sk-abcdefghijklmnop"})
    assert out["kwargs"]["api_key"] == REDACTED
    assert out["kwargs"]["max_tokens"] == 5 and out["kwargs"]["api_key_env"] == "MY_PROVIDER_API_KEY"
    assert "plain-secret" not in out["note"] and "sk-abc" not in out["note"]
