"""The typed episode record (harness/records.py) and the frame every run_episode shares
(harness/benchmarks/episode.py): the on-disk keys and their order stay those results.jsonl always had."""

from __future__ import annotations

import json

import pytest

from harness.benchmarks.episode import EpisodeFrame
from harness.errors import StrategyError
from harness.ledger import Ledger
from harness.records import EpisodeRecord
from harness.serving.model_client import Usage
from strategies import TaskView, Trajectory

# a τ² record's keys, in order (the shared ones, the ledger's, then the benchmark's own)
LEGACY_TAU2_KEYS = ["task_id", "success", "reward", "termination", "error", "error_detail", *Ledger().record_fields(),
                    "wall_s", "task_text", "task_set", "agent", "judge_model"]


def trajectory() -> Trajectory:
    return Trajectory(task=TaskView("b", "t1", "hi"), messages=({"role": "user", "content": "hi"},), reward=1.0,
                      success=True)


def test_record_fields_keep_the_results_jsonl_keys_and_their_order():
    record = EpisodeRecord(task_id="t1", success=True, reward=1.0, termination="user_stop", error=None,
                           error_detail=None, ledger=Ledger().record_fields(), wall_s=0.5, task_text="hi",
                           extra={"task_set": {"v": 1}, "agent": "react", "judge_model": None})
    fields = record.fields()
    assert list(fields) == LEGACY_TAU2_KEYS
    assert (fields["termination"], fields["agent"], fields["usage"]["agent"]["calls"]) == ("user_stop", "react", 0)
    json.dumps(fields)  # a results.jsonl line


def test_a_benchmark_column_may_not_replace_a_shared_one():
    with pytest.raises(ValueError, match=r"repeats shared field\(s\) \['steps', 'success'\]"):
        EpisodeRecord(task_id="t1", success=True, reward=1.0, termination="completed", error=None,
                      error_detail=None, ledger={"steps": 1}, wall_s=0.1, task_text="",
                      extra={"success": False, "steps": 9})


def test_frame_labels_a_failure_writes_redacted_and_atomically_and_builds_the_record(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMDELIV_TEST_API_KEY", "sk-test-0123456789abcdef")
    frame = EpisodeFrame()
    frame.ledger.add_agent_step(Usage(prompt_tokens=10, completion_tokens=2, cached_tokens=0, cost_usd=0.0,
                                      latency_s=0.0), 3, ["g1"])
    frame.fail(StrategyError("s", "deliver", RuntimeError("boom")))
    path = tmp_path / "trajectories" / "job" / "t1.json"
    frame.write(path, "the key sk-test-0123456789abcdef leaked into the trajectory")
    assert "sk-test" not in path.read_text() and [p.name for p in path.parent.iterdir()] == ["t1.json"]
    record, traj = frame.finish("t1", success=False, reward=0.0, termination="strategy", task_text="hi",
                                trajectory=trajectory(), pass_count=0)
    fields = record.fields()
    agent = fields["usage"]["agent"]
    assert (fields["error"], agent["calls"], agent["prompt"], fields["pass_count"]) == ("strategy", 1, 10, 0)
    assert "boom" in fields["error_detail"] and traj.success is True
