"""awm_online (Agent Workflow Memory, online; Wang et al. 2024): the reference's online settings, the model's own
judgement deciding what is learned (no labels), re-induction from every judged success of the stream, per-trial
streams. The model is a scripted callable (no language model)."""

from __future__ import annotations

import yaml
from litellm import ModelResponse

import strategies
from conftest import REPO, read_records
from harness.run import check_job, compose_job
from harness.runner import run_job
from strategies import StepView, TaskView, Trajectory
from strategies.awm.strategy import INSTRUCTION
from strategies.awm import AwmOnline
from strategies.awm.online import ONLINE_MAX_TOKENS, ONLINE_TEMPERATURE
from memory_kit.judge import JUDGE_SYSTEM
from memory_kit.role_llm import RoleLLM


def test_online_settings_are_the_references_and_the_config_says_the_same():
    # zorazrw/agent-workflow-memory webarena/induce_prompt.py: temperature 1.0, max_tokens 2048, criteria autoeval
    # (the model's judgement, not the reward) by default; pipeline.py: infer, evaluate, re-induce after each task
    assert (ONLINE_TEMPERATURE, ONLINE_MAX_TOKENS) == (1.0, 2048)
    cfg = yaml.safe_load((REPO / "configs" / "strategy" / "awm_online.yaml").read_text())
    assert cfg["name"] == "awm_online" and cfg["options"] == {"model": None, "budget_tokens": None}
    assert "awm_online" in strategies.available() and strategies.learns_online("awm_online", {})
    assert AwmOnline.declaration.memory_entry_only and not strategies.uses_ground_truth("awm_online", {})


class Scripted:
    """Judges by the words in the task text ("ok" = success) and writes one workflow per induction call."""

    def __init__(self):
        self.seen = []

    def __call__(self, model, messages, **kwargs):
        system, user = messages[0]["content"], messages[1]["content"]
        self.seen.append((system, user, kwargs))
        if system == JUDGE_SYSTEM:
            text = f'Thoughts: -\nStatus: "{"success" if "ok" in user.split("**Trajectory:**")[0] else "failure"}"'
        else:
            text = f"# Summary Workflows\nWorkflow 1: Induction {len(self.seen)}: a({{x}}) -> b({{y}})"
        return ModelResponse(choices=[{"message": {"role": "assistant", "content": text}}],
                             usage={"prompt_tokens": 40, "completion_tokens": 8, "total_tokens": 48})


def _episode(task_id: str, text: str, success: bool | None = None) -> Trajectory:
    return Trajectory(task=TaskView("b", task_id, text), reward=None, success=success,
                      messages=({"role": "assistant", "content": "", "tool_calls": [
                          {"id": "c", "type": "function", "function": {"name": f"tool_{task_id}", "arguments": "{}"}}]},))


def test_every_task_re_induces_from_every_judged_success_and_labels_are_not_read():
    """zorazrw/agent-workflow-memory webarena/pipeline.py: per task, run, evaluate (autoeval), then induce_prompt.py
    (temperature 1.0, max_tokens 2048) from every judged success so far: after every task, not only a success."""
    model = Scripted()
    awm = AwmOnline(llm=RoleLLM("scripted/x", completion=model))
    view = (TaskView("b", "q", "anything"), StepView(0))
    assert awm.deliver(*view).text == ""  # no workflows at first
    # labelled a success, judged a failure: nothing learned (the label is not read)
    assert awm.learn(_episode("1", "refund it", success=True)) == {"awm_judged_success": False, "awm_workflows": 0}
    assert len(model.seen) == 1 and awm.deliver(*view).text == ""
    assert model.seen[0][2]["temperature"] == 0.0  # the judge: webarena/autoeval's clients, temperature 0
    assert awm.learn(_episode("2", "ok, cancel it")) == {"awm_judged_success": True, "awm_workflows": 1}
    system, user, kwargs = model.seen[-1]
    assert system == INSTRUCTION and (kwargs["temperature"], kwargs["max_tokens"]) == (1.0, 2048)
    assert "tool_2" in user and "tool_1" not in user
    assert "- [awm-1] Induction 3: a({x}) -> b({y})" in awm.deliver(*view).text
    awm.learn(_episode("3", "ok, exchange it"))
    user = model.seen[-1][1]
    assert "tool_2" in user and "tool_3" in user and "tool_1" not in user  # every judged success so far
    text = awm.deliver(*view).text
    assert "Induction 5" in text and "Induction 3" not in text  # the new workflows replace the old
    assert awm.workflows[0].source_task_ids == ("2", "3")
    # judged a failure: induced again all the same (at temperature 1.0), from the same judged successes
    assert awm.learn(_episode("4", "refund it")) == {"awm_judged_success": False, "awm_workflows": 1}
    system, user, kwargs = model.seen[-1]
    assert system == INSTRUCTION and "tool_3" in user and "tool_4" not in user and kwargs["temperature"] == 1.0
    assert "Induction 7" in awm.deliver(*view).text
    assert awm.for_trial(1).deliver(*view).text == "" and awm.for_trial(1) is awm.for_trial(1)


def test_awm_online_runs_on_the_simulated_world_and_learns_between_episodes(artifact, runs_dir):
    cfg = compose_job(["model=simulated", f"model.world={artifact}", "benchmark=tau2_retail", "benchmark.limit=3",
                       "strategy=awm_online", f"runs_dir={runs_dir}", "progress=false", "run_name=awm"])
    check_job(cfg)
    run_job(cfg)
    by_task = {r["task_id"]: r for r in read_records(runs_dir / "awm")}
    assert len(by_task) == 3 and all(r["usage"]["learning"]["calls"] >= 1 for r in by_task.values())
    assert by_task["5"]["memory_tokens"] == 0 < by_task["9"]["memory_tokens"]  # the first task had no workflows
