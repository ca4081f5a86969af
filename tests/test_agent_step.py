"""The one agent step (harness/assembly/step.py) every agent format uses, and the one definition of the
assembly settings (harness/assembly/options.py) that the config, the agents and analysis read."""

from __future__ import annotations

import pytest

from harness.assembly.layout import chat_layout
from harness.assembly.options import ANSWER_MODES, DEFAULTS, PLACEMENTS, AssemblyOptions, check
from harness.assembly.step import AgentStep
from harness.ledger import Ledger
from harness.serving.model_client import Completion, Usage
from strategies import Delivery, Guideline, StrategyBase, TaskView

CLAUDE = "anthropic/claude-sonnet-4-5"  # a provider that caches only marked prefixes


class OneLesson(StrategyBase):
    def __init__(self):
        super().__init__(name="one_lesson")
        self.seen: list[tuple[int, int]] = []

    def deliver(self, task, step):
        self.seen.append((step.index, len(step.messages)))
        return Delivery(guidelines=(Guideline(id="g1", text="lesson"),), text="<memory>lesson</memory>",
                        dropped=("g9",))


class Client:
    model = CLAUDE

    def __init__(self):
        self.sent: list[tuple[list, bool]] = []

    def send(self, messages, tools):
        self.sent.append((messages, tools))
        return Completion(content="ok", tool_calls=(), usage=Usage(prompt_tokens=50, completion_tokens=5,
                                                                   cached_tokens=None, cost_usd=None, latency_s=0.0))


def test_a_step_delivers_assembles_marks_the_cache_sends_and_ledgers_every_call():
    client, ledger, strategy = Client(), Ledger(), OneLesson()
    options = AssemblyOptions(placement="first_user_message")
    step = AgentStep(client, strategy, TaskView(benchmark="b", task_id="t", description="d"), ledger, len, options,
                     send=client.send, measure=lambda messages: 0)
    history = [{"role": "user", "content": "hello"}]
    request, completion = step.take(3, "SYSTEM", history, chat_layout(options.placement, client.model))
    assert completion.content == "ok" and strategy.seen == [(3, 1)]
    sent, tools = client.sent[0]
    assert tools and sent[1]["content"].startswith("<memory>lesson</memory>") and "cache_control" in sent[1]
    assert history == [{"role": "user", "content": "hello"}]  # the agent's history is not changed
    step.call(request, [*request.messages, {"role": "user", "content": "THINK"}], tools=False)  # ReAct's THINK
    assert client.sent[1][1] is False and client.sent[1][0][-1]["content"] == "THINK"
    step.answer([{"role": "user", "content": "clean"}], request.delivered)  # answer_mode=rebuild
    assert [(s.phase, s.delivered_ids, s.dropped_ids) for s in ledger.agent_steps] == [
        ("act", ("g1",), ("g9",)), ("act", ("g1",), ("g9",)), ("answer", ("g1",), ("g9",))]
    assert all(s.memory_tokens == len("<memory>lesson</memory>") for s in ledger.agent_steps)


def test_without_a_strategy_the_request_has_no_memory():
    client, ledger = Client(), Ledger()
    step = AgentStep(client, None, None, ledger, len, AssemblyOptions(prompt_caching=False), send=client.send)
    step.take(0, "SYSTEM", [{"role": "user", "content": "hi"}], chat_layout("after_policy", client.model))
    assert client.sent[0][0][0] == {"role": "system", "content": "SYSTEM"} and ledger.agent_steps[0].memory_tokens == 0


def test_settings_are_checked_in_one_place_against_one_definition():
    with pytest.raises(ValueError, match=f"benchmark.placement='middle'; valid: {', '.join(PLACEMENTS)}"):
        AssemblyOptions(placement="middle")
    with pytest.raises(ValueError, match=f"benchmark.answer_mode='both'; valid: {', '.join(ANSWER_MODES)}"):
        AssemblyOptions(answer_mode="both")
    with pytest.raises(ValueError, match="valid: first_user_message$"):  # a benchmark offering a subset
        check("after_policy", placements=("first_user_message",))
    with pytest.raises(ValueError, match="placement"):
        chat_layout("middle", "gpt-4o")


def test_config_and_analysis_share_the_assembly_defaults():
    from analysis.runs.load import ASSEMBLY_FIELDS
    from harness.config import BenchmarkConfig

    assert {k: v for k, v in ASSEMBLY_FIELDS.items() if k != "placement"} == DEFAULTS
    assert {k: getattr(BenchmarkConfig, k) for k in DEFAULTS} == DEFAULTS
    assert {k: getattr(AssemblyOptions(), k) for k in DEFAULTS} == DEFAULTS
