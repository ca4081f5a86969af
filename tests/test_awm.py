"""awm (Agent Workflow Memory, offline; Wang et al. 2024): the reference's induction settings, workflows read after
`# Summary Workflows`, induced from successful train episodes only, delivered whole; the SCRIPTED designs model
answers the induction (no language model)."""

from __future__ import annotations

import subprocess
import sys

import pytest
import yaml

import strategies
from conftest import HUNG_S, REPO, SAMPLE_MEMORY
from harness.memory import workflows
from harness.provenance import ProvenanceError, check_use
from strategies import StepView, StrategyContext, TaskView, Trajectory, load_memory
from strategies.awm import KIND, MAX_TOKENS, SUMMARY, TEMPERATURE, AgentWorkflowMemory, parse_workflows


def test_induction_settings_are_the_references():
    # zorazrw/agent-workflow-memory mind2web/offline_induction.py: temperature 0, max_tokens 1024, the workflows
    # after "# Summary Workflows" (instruction + one-shot example)
    assert (TEMPERATURE, MAX_TOKENS, SUMMARY) == (0.0, 1024, "# Summary Workflows")
    cfg = yaml.safe_load((REPO / "configs" / "strategy" / "awm.yaml").read_text())
    assert cfg["name"] == "awm" and "awm" in strategies.available()
    answer = "Workflow 9: ignored example\n# Summary Workflows\nWorkflow 1: A: x -> y\n- Workflow 2: B: y -> z\n"
    assert parse_workflows(answer) == ["A: x -> y", "B: y -> z"]


def _episode(task_id: str, tool: str, success: bool) -> Trajectory:
    calls = [{"function": {"name": n, "arguments": "{}"}} for n in ("find_user", tool)]
    return Trajectory(task=TaskView("tau2_retail", task_id, f"task {task_id}"), success=success, reward=float(success),
                      messages=({"role": "assistant", "content": "", "tool_calls": calls},))


def test_workflows_come_from_successful_train_episodes_only(tmp_path, monkeypatch):
    episodes = [("1", _episode("1", "cancel_order", True)), ("2", _episode("2", "refund_order", False))]
    learned = {"benchmark": "tau2_retail", "split": "train", "task_ids": ["1", "2"], "ground_truth": False}
    config = {"model": {"name": "memdeliv-scripted/oracle"}, "benchmark": {"name": "tau2_retail"},
              "learned_from": learned}
    monkeypatch.setattr(workflows, "load_trajectories", lambda run_dir: (episodes, config, []))
    out = tmp_path / "awm" / "workflows.jsonl"
    summary = workflows.build(tmp_path, out)
    items, meta = load_memory(out)
    assert summary["successful"] == 1 and [g.text for g in items] == ["Open like earlier tasks: find_user({...}) -> "
                                                                      "cancel_order({...})"]  # not refund_order
    assert meta["kind"] == KIND and meta["learned_from"]["ground_truth"] is True and "SCRIPTED" in meta["note"]
    assert summary["extractor_usage"]["calls"] == 1  # one induction call per domain
    with pytest.raises(ProvenanceError, match="in-sample"):
        check_use(meta, "tau2_retail", ["2"], False)
    delivery = AgentWorkflowMemory(workflows=tuple(items)).deliver(TaskView("b", "q", ""), StepView(0))
    assert delivery.text.startswith("<workflows>") and "- [awm-1] Open like earlier tasks" in delivery.text
    with pytest.raises(ValueError, match="workflows artifact.*make awm"):
        strategies.create("awm", StrategyContext(memory_path=str(SAMPLE_MEMORY)))
    refused = subprocess.run([sys.executable, "-m", "harness.memory.workflows", "--name", "u", "--runs-dir",
                              str(tmp_path / "r"), "--", "model=oracle", "benchmark.split=test"], cwd=REPO,
                             capture_output=True, text=True, timeout=HUNG_S)
    assert refused.returncode == 2 and "train split only" in refused.stderr
