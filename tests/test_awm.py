"""awm (Agent Workflow Memory, offline; Wang et al. 2024): the reference's induction settings, workflows read after
`# Summary Workflows`, induced from successful train episodes only, delivered whole; the SCRIPTED designs model
answers the induction (no language model)."""

from __future__ import annotations


import pytest
import yaml

import strategies
from conftest import REPO, SAMPLE_MEMORY, main_in_process
from harness.memory import workflows
from harness.provenance import ProvenanceError, check_use
from strategies import StepView, StrategyContext, TaskView, Trajectory
from memory_kit.memory_file import load_memory
from strategies.awm.strategy import KIND, MAX_TOKENS, SUMMARY, TEMPERATURE, parse_workflows
from strategies.awm import AgentWorkflowMemory


def test_induction_settings_are_the_references():
    # zorazrw/agent-workflow-memory mind2web/offline_induction.py: temperature 0, max_tokens 1024, the workflows
    # after "# Summary Workflows" (instruction + one-shot example)
    assert (TEMPERATURE, MAX_TOKENS, SUMMARY) == (0.0, 1024, "# Summary Workflows")
    cfg = yaml.safe_load((REPO / "configs" / "strategy" / "awm.yaml").read_text())
    assert cfg["name"] == "awm" and "awm" in strategies.available()
    answer = "Workflow 9: ignored example\n# Summary Workflows\nWorkflow 1: A: x -> y\n- Workflow 2: B: y -> z\n"
    assert parse_workflows(answer) == ["A: x -> y", "B: y -> z"]
    # a workflow written as a title and its steps on lines of their own is kept whole: the reference keeps the
    # model's whole answer as the workflow text (mind2web/offline_induction.py), not only its first line
    steps = "# Summary Workflows\nWorkflow 1: Cancel an order\n1. find_user({email})\n2. cancel({order_id})\n\n" \
            "Workflow 2: Look up\nget_order({order_id})\n"
    assert parse_workflows(steps) == ["Cancel an order 1. find_user({email}) 2. cancel({order_id})",
                                      "Look up get_order({order_id})"]


def _episode(task_id: str, tool: str, success: bool) -> Trajectory:
    calls = [{"function": {"name": n, "arguments": "{}"}} for n in ("find_user", tool)]
    return Trajectory(task=TaskView("tau2_retail", task_id, f"task {task_id}"), success=success, reward=float(success),
                      messages=({"role": "assistant", "content": "", "tool_calls": calls},))


def test_by_default_workflows_are_induced_from_the_gold_train_demonstrations(tmp_path, monkeypatch):
    """zorazrw/agent-workflow-memory mind2web/offline_induction.py induces from the annotated train demonstrations:
    here each train task's gold actions (the benchmark's gold_solution), after the task as the agent saw it."""
    from memory_kit.role_llm import RoleLLM

    said = {"Hi, I want to exchange a keyboard.": "0", "Hi, my order is wrong.": "1"}
    episodes = [(task, Trajectory(task=TaskView("tau2_retail", task, ""), reward=None, success=False,
                                  messages=({"role": "user", "content": text},))) for text, task in said.items()]
    config = {"model": {"name": "memdeliv-scripted/oracle"}, "benchmark": {"name": "tau2_retail", "domain": "retail", "split": "train",
                                                                          "task_ids": ["0", "1"]},
              "learned_from": {"benchmark": "tau2_retail", "split": "train", "task_ids": ["0", "1"]}}
    monkeypatch.setattr(workflows, "load_trajectories", lambda run_dir: (episodes, config, []))
    prompts = []
    monkeypatch.setattr(RoleLLM, "ask", lambda self, system, user, role: prompts.append(user) or
                        "# Summary Workflows\nWorkflow 1: Find the user: find_user_id_by_name_zip({name}) -> x")
    summary = workflows.build(tmp_path, tmp_path / "awm" / "workflows.jsonl")  # no episode succeeded: gold is used
    items, meta = load_memory(tmp_path / "awm" / "workflows.jsonl")
    assert summary["demonstrations"] == meta["demonstrations"] == "gold" and summary["shown"] == 2
    assert items[0].source_task_ids == ("0", "1")
    for text in said:
        assert f"Task: {text}\nActions: find_user_id_by_" in prompts[0]  # retail's gold starts by finding the user


def test_workflows_come_from_successful_train_episodes_only(tmp_path, monkeypatch):
    episodes = [("1", _episode("1", "cancel_order", True)), ("2", _episode("2", "refund_order", False))]
    learned = {"benchmark": "tau2_retail", "split": "train", "task_ids": ["1", "2"], "ground_truth": False}
    config = {"model": {"name": "memdeliv-scripted/oracle"}, "benchmark": {"name": "tau2_retail"},
              "learned_from": learned}
    monkeypatch.setattr(workflows, "load_trajectories", lambda run_dir: (episodes, config, []))
    out = tmp_path / "awm" / "workflows.jsonl"
    summary = workflows.build(tmp_path, out, demonstrations="successes")  # the option: the agent's own successes
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
    refused = main_in_process("harness.memory.workflows", "--name", "u", "--runs-dir", str(tmp_path / "r"), "--",
                              "model=oracle", "benchmark.split=test")
    assert refused.returncode == 2 and "train split only" in refused.stderr
