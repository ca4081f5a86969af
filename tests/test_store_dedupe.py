"""Readers keep one record per (job, task, trial): the latest attempt, else the last complete line."""

from __future__ import annotations

from analysis import load_records
from harness.row import Row
from harness.runner.job_rows import JobRows
from harness.store import RunStore


def rec(task: str, trial: int, attempt: int | None = None, error: str | None = None, job: str = "j") -> Row:
    r = Row(job=job, task_id=task, trial=trial, success=error is None, reward=1.0, error=error)
    return r if attempt is None else Row.of((r.to_dict(), "learner_extra"), ({"attempt": attempt}, "learner_extra"))


def test_store_and_loader_agree_on_the_record_that_counts(tmp_path):
    store = RunStore(tmp_path)
    rows = [rec("1", 0, error="infra"),            # attempt 1 (no field: written before attempts existed)
            rec("2", 0, attempt=1),
            rec("2", 0, attempt=1, error="agent"),  # the same attempt written twice: the later line wins
            rec("1", 0, attempt=2),                 # the infra episode, run again
            rec("3", 0, attempt=1, error="infra"),
            rec("1", 0, job="other")]
    for r in rows:
        store.append(r)
    job = JobRows("j", store.read(), retry_infra=False)
    assert job.dropped == {"superseded": 1, "duplicates": 1}
    assert {k: (r.get("attempt", 1), r["error"]) for k, r in job.latest.items()} == {
        ("1", 0): (2, None), ("2", 0): (1, "agent"), ("3", 0): (1, "infra")}
    assert job.done == {("1", 0), ("2", 0), ("3", 0)}
    again = JobRows("j", store.read(), retry_infra=True)
    assert again.done == {("1", 0), ("2", 0)} and again.attempts == {("3", 0): 2}  # 3 runs again on resume
    assert job.totals()["infra_errors"] == 1

    warnings: list[str] = []
    df = load_records([tmp_path], warn=warnings.append)
    assert len(df) == 4 and df.attrs["dropped"] == {"superseded": 1, "duplicates": 1}
    assert warnings == ["kept one record per episode: dropped 1 duplicate(s) and 1 superseded attempt(s)"]
    mine = df[df["job"] == "j"].set_index("task_id")
    assert mine.loc["1", "attempt"] == 2 and mine.loc["2", "error"] == "agent"
    assert len(load_records([tmp_path], warn=warnings.append, dedupe=False)) == len(rows)
