"""The typed row of results.jsonl (harness/row.py): what a real sweep writes is the model, the model is the docs'
schema table, a line reads back to the same bytes, and a job reads its results.jsonl once."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from conftest import REPO, SAMPLE_MEMORY
from harness.row import EXTRAS, FIELD_NAMES, Row, RowError, parse_rows, read_rows
from harness.run import compose_job
from harness.runner import run_job

DOCS = REPO / "docs" / "running.md"


def documented_fields() -> set[str]:
    """The field names in the first column of docs/running.md's record schema table."""
    lines = DOCS.read_text(encoding="utf-8").split("### Record schema", 1)[1].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| field"))
    table = [line for line in lines[start + 2:] if line.startswith("|")]
    table = table[:next((i for i, line in enumerate(lines[start + 2:]) if not line.startswith("|")), len(table))]
    return {name for line in table for name in re.findall(r"`([a-z_0-9]+)`", line.split("|")[1])}


@pytest.fixture(scope="module")
def sweep_rows(tmp_path_factory) -> list[str]:
    runs = tmp_path_factory.mktemp("runs")
    for strategy in ("none", "full"):
        run_job(compose_job(["model=oracle", f"strategy={strategy}", "benchmark.limit=1", f"memory={SAMPLE_MEMORY}",
                             f"runs_dir={runs}", "run_name=row", "progress=false"]))
    return (runs / "row" / "results.jsonl").read_text(encoding="utf-8").splitlines()


def test_every_key_of_a_real_row_is_declared_and_documented(sweep_rows):
    documented = documented_fields()
    for line in sweep_rows:
        row = Row.from_json(line)
        assert not any(getattr(row, bucket) for bucket in EXTRAS), line  # nothing undeclared
        assert set(json.loads(line)) <= set(FIELD_NAMES) and set(json.loads(line)) <= documented
    assert documented == set(FIELD_NAMES)  # the table lists every declared field and nothing else


def test_a_row_reads_back_to_the_same_bytes(sweep_rows):
    for line in sweep_rows:
        assert Row.from_json(line).to_json() == line


def test_a_schema_1_line_keeps_its_owners_and_usage_and_is_written_as_schema_2():
    line = json.dumps({"job": "j", "trial": 0, "task_id": "1", "success": True, "steps": 3, "prompt_tokens": 10,
                       "cost_usd": None, "user_prompt_tokens": 4, "user_cost_usd": 0.5, "task_text": "hi",
                       "keyword": "refund", "provider_retries": 0, "my_fact": 3, "strategy_calls": 2,
                       "strategy_cost_usd": 0.25, "trajectory": "t.json", "attempt": 2, "learned": True})
    row = Row.from_json(line)  # schema 1 (no `schema`): an undeclared key's owner is where it stands
    assert (row.benchmark_extra, row.strategy_extra, row.learner_extra) == \
        ({"keyword": "refund"}, {"my_fact": 3}, {"learned": True})
    assert row.usage == {"agent": {"calls": 3, "prompt": 10, "cost": None}, "user": {"prompt": 4, "cost": 0.5},
                         "strategy": {"calls": 2, "cost": 0.25}}
    assert row["keyword"] == "refund" and row.attempt_number == 2 and row["user_cost_usd"] == 0.5
    assert row.columns() == json.loads(line)  # as readers asking by column name see it
    written = json.loads(row.to_json())  # schema 2: each owner's columns under its key, usage by role
    assert written["benchmark_extra"] == {"keyword": "refund"} and written["strategy_extra"] == {"my_fact": 3}
    assert "keyword" not in written and "user_cost_usd" not in written and written["usage"] == row.usage
    again = Row.from_json(json.dumps({**written, "schema": 2}))
    assert again == replace(row, schema=2)


def test_a_schema_2_line_declares_every_key():
    good = {"schema": 2, "task_id": "1", "success": True, "usage": {"agent": {"calls": 1}},
            "strategy_extra": {"my_fact": 3}}
    assert Row.from_dict(good).strategy_extra == {"my_fact": 3}
    with pytest.raises(ValueError, match=r"undeclared key\(s\) \['my_fact'\] in a schema 2 row"):
        Row.from_dict({**good, "my_fact": 3})
    with pytest.raises(ValueError, match=r"repeats declared field\(s\) \['success'\]"):
        Row(task_id="1", success=True, strategy_extra={"success": False})
    with pytest.raises(ValueError, match="needs task_id and success"):
        Row.from_json('{"task_id": "1"}')


def test_one_reader_skips_a_torn_last_line_and_names_a_corrupt_one(tmp_path):
    good = Row(job="j", task_id="1", trial=0, success=True).to_json()
    assert [row.task_id for _, row in parse_rows(f"{good}\n{{\"job\": \"j\", \"ta".encode(), "f")] == ["1"]
    with pytest.raises(RowError, match=r"^f:2: corrupt record"):
        parse_rows(f"{good}\nnot json\n{good}\n".encode(), "f")
    seen: list[tuple[int, bool]] = []
    path = tmp_path / "results.jsonl"
    path.write_text(f"{good}\n[1]\n{good}\n{{\"tor")
    rows = read_rows(path, lambda lineno, reason, torn: seen.append((lineno, torn)))
    assert [n for n, _ in rows] == [1, 3] and seen == [(2, False), (4, True)]
    assert read_rows(tmp_path / "missing.jsonl") == []


def run_counting(runs: Path, limit: int) -> dict[str, int]:
    proc = subprocess.run([sys.executable, str(REPO / "tests" / "reads_job.py"), "-m", "model=oracle",
                           "strategy=none,full", f"memory={SAMPLE_MEMORY}", f"benchmark.limit={limit}",
                           f"runs_dir={runs}", "run_name=once", "progress=false"],
                          cwd=REPO, capture_output=True, text=True, timeout=900,
                          env={**__import__("os").environ, "PYTHONPATH": str(REPO / "tests")})
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_a_job_reads_its_results_once_and_checks_its_memory_once(tmp_path):
    """Two jobs, then both resumed with one more task: each job reads results.jsonl once (on start; the first job
    of a new run finds none), and its benchmark is validated and its memory's provenance checked once, by the
    CLI's check, not again to run."""
    assert run_counting(tmp_path, limit=1) == {"reads": 1, "validates": 2, "provenance": 2}
    assert run_counting(tmp_path, limit=2) == {"reads": 2, "validates": 2, "provenance": 2}
    rows = [row for _, row in read_rows(tmp_path / "once" / "results.jsonl")]
    assert sorted((r.strategy, r.task_id) for r in rows) == sorted((s, t) for s in ("none", "full")
                                                                   for t in {r.task_id for r in rows})
    assert len(rows) == 4  # the resume ran only the new task of each job
