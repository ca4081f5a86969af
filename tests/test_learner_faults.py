"""A learner's failed call never fails the agent's episode: every online learner, on a FAKE provider on 127.0.0.1
(tests/fault_server.py) that fails only the strategy's own calls.

- 429 twice, then 200: the call is retried with the run's backoff, every agent success stands, the update is applied;
- 500 on every learner call: every agent success stands, each update is recorded lost (`update_lost`), the manifest
  and the table's errors column count them;
- the run's `model.api_key_env` key reaches every learner call.
"""

from __future__ import annotations

import json

import pytest

from analysis.table import main as table_main
from conftest import compose, read_records
from fault_server import FaultServer, scripts_for
from harness.runner import run_job
from learner_replies import learner_reply

KEY = "learner-fault-cred-0123456789"  # a local fake credential
TASKS = 2
LEARNERS = {"ace_online": [], "reasoning_bank": [], "dynamic_cheatsheet": [],
            "retrieval_synthesis": ["strategy=dynamic_cheatsheet", "strategy.options.variant=retrieval_synthesis"],
            "awm_online": []}


def config(runs_dir, name, api_base, learner):
    strategy = LEARNERS[learner] or [f"strategy={learner}"]
    return compose("model=litellm", "model.name=openai/fault-agent", f"+model.kwargs.api_base={api_base}",
                   "model.api_key_env=LLMCRED", "model.max_retries=2", "model.retry_backoff_s=0.01",
                   f"benchmark.limit={TASKS}", "concurrency=1", "progress=false", *strategy,
                   f"runs_dir={runs_dir}", f"run_name={name}")


@pytest.mark.parametrize("learner", list(LEARNERS))
def test_a_learners_failed_call_loses_the_update_and_never_the_episode(runs_dir, monkeypatch, capsys, learner):
    monkeypatch.setenv("LLMCRED", KEY)
    scripts, scenarios = scripts_for(config(runs_dir, "x", "http://unused", learner))
    with FaultServer(scripts, scenarios, retry_after=0, learner_reply=learner_reply,
                     learner_schedule=["429", "429"]) as server:
        run_job(config(runs_dir, "recovered", server.api_base, learner))
        recovered_log = list(server.log)
    with FaultServer(scripts, scenarios, learner_reply=learner_reply) as server:
        server.learner_default = "500"
        run_job(config(runs_dir, "lost", server.api_base, learner))
        lost_log = list(server.log)

    recovered, lost = read_records(runs_dir / "recovered"), read_records(runs_dir / "lost")
    for rows in (recovered, lost):  # the agent's episodes stand, whatever the learner's calls did
        assert len(rows) == TASKS and all(r["success"] and r["error"] is None for r in rows), rows
    assert [e["kind"] for e in recovered_log if e["role"] == "learner"][:3] == ["429", "429", "ok"]
    assert not any(r["update_lost"] for r in recovered)
    assert all(r["update_lost"] for r in lost)
    # applied: the second episode saw what the first taught; lost: it saw the stream's starting memory
    assert recovered[-1]["memory_tokens"] > lost[-1]["memory_tokens"]
    # the key reaches every call of the learner, retried ones included
    learner_calls = [e for log in (recovered_log, lost_log) for e in log if e["role"] == "learner"]
    assert learner_calls and all(e["auth"] == f"Bearer {KEY}" for e in learner_calls)
    assert sum(e["kind"] == "500" for e in lost_log) >= 3 * TASKS  # each lost call tried max_retries + 1 times

    manifest = json.loads((runs_dir / "lost" / "manifest.json").read_text())
    key, job = next(iter(manifest["jobs"].items()))
    assert job["updates_lost"] == TASKS and not job["errors"]
    capsys.readouterr()
    assert table_main([str(runs_dir / "lost")]) == 0
    line = next(row for row in capsys.readouterr().out.splitlines() if row.split()[1:2] == [key.split("/")[-1]])
    assert f"update lost {TASKS}" in line and "100.0%" in line


def test_a_learner_whose_provider_is_unusable_stops_the_job_as_the_agent_would(runs_dir, monkeypatch):
    monkeypatch.setenv("LLMCRED", KEY)
    scripts, scenarios = scripts_for(config(runs_dir, "x", "http://unused", "dynamic_cheatsheet"))
    with FaultServer(scripts, scenarios, learner_reply=learner_reply) as server:
        server.learner_default = "401"
        summary = run_job(config(runs_dir, "badkey", server.api_base, "dynamic_cheatsheet"))
        learner_calls = [e for e in server.log if e["role"] == "learner"]
    assert summary["stopped"]["reason"] == "provider_unusable" and "dynamic_cheatsheet" in summary["stopped"]["detail"]
    assert len(learner_calls) == 1  # not retried: every call would fail alike
    results = runs_dir / "badkey" / "results.jsonl"  # no row: the episode whose update could not run reruns on resume
    assert not results.exists() or not results.read_text().strip()
