"""Memory tools (docs/memory-tools.md): a strategy's MemoryTool offered beside the benchmark's tools and answered
inside the agent step (harness/assembly/step.py, memory_calls.py), with a stand-in client that returns SCRIPTED
completions (no language model), in the native and the prompted tool format."""

from __future__ import annotations

import json

import pytest

from harness.assembly import memory_calls
from harness.assembly.layout import chat_layout
from harness.assembly.options import AssemblyOptions
from harness.assembly.step import AgentStep
from harness.ledger import Ledger
from harness.serving.model_client import Completion, ToolCallText, Usage
from harness.serving.prompted_tools import render_tools
from strategies import Delivery, Guideline, MemoryTool, MemoryToolError, StrategyBase, TaskView

LESSON = Guideline(id="g7", text="check the order status before changing it")
SCHEMA = {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"],
          "additionalProperties": False}


def recall(args):
    if args["query"] == "nothing":
        raise MemoryToolError("query matches nothing")
    return Delivery((LESSON,), f"- [g7] {LESSON.text}")


class Pulling(StrategyBase):
    """A strategy whose delivery is a notice and one memory tool (as on_demand's)."""

    def deliver(self, task, step):
        return Delivery((), "You may recall lessons.", tools=(MemoryTool("recall", "Recall lessons.", SCHEMA, recall),))


def usage():
    return Usage(prompt_tokens=10, completion_tokens=2, cached_tokens=None, cost_usd=None, latency_s=0.0)


def native(*calls):
    return Completion(None, tuple(ToolCallText(f"c{i}", n, a) for i, (n, a) in enumerate(calls)), usage())


def text(content):
    return Completion(content, (), usage())


class Scripted:
    """A stand-in client answering with SCRIPTED completions in order, keeping what each call was sent."""

    model = "gpt-4o"

    def __init__(self, *replies):
        self.replies, self.sent = list(replies), []

    def send(self, messages, tools):
        self.sent.append(messages)
        return self.replies.pop(0)


def step_with(client, tool_format="native"):
    ledger = Ledger()
    step = AgentStep(client, Pulling(), TaskView("b", "t", ""), ledger, len, AssemblyOptions(prompt_caching=False),
                     send=client.send, measure=lambda m: 0, tool_format=tool_format)
    return step, ledger


def take(step, system="SYSTEM"):
    return step.take(0, system, [{"role": "user", "content": "hi"}], chat_layout("after_policy", "gpt-4o"))


def test_a_native_memory_call_is_answered_in_the_step_and_only_the_next_reply_returns():
    client = Scripted(native(("recall", '{"query": "change an order"}')), native(("get_order", '{"id": 1}')))
    step, ledger = step_with(client)
    request, completion = take(step)
    assert [c.name for c in completion.tool_calls] == ["get_order"]  # the benchmark sees only this
    second = client.sent[1]
    assert second[-2]["tool_calls"][0]["function"]["name"] == "recall"
    assert second[-1] == {"role": "tool", "tool_call_id": "c0", "content": "- [g7] " + LESSON.text}
    assert [s["function"]["name"] for s in step.memory_schemas] == ["recall"]
    assert ledger.record_fields()["memory_tool_calls"] == 1 and ledger.memory_tool_fields()["memory_tool_ids"] == [
        ["g7"]]
    notice, answer = len("You may recall lessons."), len("- [g7] " + LESSON.text)
    assert [s.memory_tokens for s in ledger.agent_steps] == [notice, notice + answer]  # the answer is memory


@pytest.mark.parametrize("call, reason", [
    (("recall", "{not json"), "arguments are not JSON"),
    (("recall", '{"topic": "x"}'), "missing required argument(s) ['query']"),
    (("recall", '{"query": "x", "k": 2}'), "unexpected argument(s) ['k']"),
    (("recall", '{"query": 3}'), "argument(s) ['query'] must be strings"),
    (("recall", '["query"]'), "arguments must be a JSON object"),
    (("recall", '{"query": "nothing"}'), "query matches nothing"),
])
def test_a_malformed_memory_call_gets_an_error_answer_is_counted_and_the_step_goes_on(call, reason):
    client = Scripted(native(call), text("Done."))
    step, ledger = step_with(client)
    _, completion = take(step)
    assert completion.content == "Done."
    answer = client.sent[1][-1]["content"]
    assert answer.startswith("Error: recall: ") and reason in answer
    fields = ledger.memory_tool_fields()
    assert (fields["memory_tool_calls"], fields["memory_tool_errors"], fields["memory_tool_ids"]) == (1, 1, [[]])


def test_unknown_memory_tools_and_benchmark_calls_beside_one_are_answered_with_errors_never_run():
    client = Scripted(native(("recall", '{"query": "a"}'), ("cancel_order", "{}")), text("ok"))
    step, ledger = step_with(client)
    take(step)
    answers = [m["content"] for m in client.sent[1] if m["role"] == "tool"]
    assert answers[0].startswith("- [g7]") and "'cancel_order' was not run" in answers[1]
    step.known.add("forget")  # a memory tool the episode offered before, not at this step
    client.replies = [native(("forget", "{}")), text("ok")]
    take(step)
    assert "unknown memory tool 'forget' at this step (offered: recall)" in client.sent[-1][-1]["content"]
    assert ledger.memory_tool_fields()["memory_tool_errors"] == 2


def test_a_model_that_keeps_calling_ends_the_step_without_a_memory_call_reaching_the_benchmark():
    loop = [native(("recall", '{"query": "a"}'), ("get_order", "{}"))] * (memory_calls.MAX_ROUNDS + 1)
    step, ledger = step_with(Scripted(*loop))
    _, completion = take(step)
    assert [c.name for c in completion.tool_calls] == ["get_order"]
    assert ledger.memory_tool_fields()["memory_tool_calls"] == 2 * memory_calls.MAX_ROUNDS


def test_the_prompted_format_lists_the_memory_tool_and_its_text_call_is_answered():
    call = '<tool_call>\n{"name": "recall", "arguments": {"query": "refund"}}\n</tool_call>'
    client = Scripted(text(call), text("Here is your refund."))
    step, ledger = step_with(client, "prompted")
    system = "POLICY\n\n" + render_tools([{"name": "get_order", "parameters": {}}])
    _, completion = take(step, system)
    assert completion.content == "Here is your refund."
    tools_block = client.sent[0][0]["content"].split("<tools>")[1].split("</tools>")[0]
    assert '"name": "get_order"' in tools_block and '"name": "recall"' in tools_block
    assert client.sent[1][-1] == {"role": "tool", "tool_call_id": "memory_0", "content": "- [g7] " + LESSON.text}
    client.replies = [text('<tool_call>{"name": "recall", "arguments": {"query": </tool_call>'), text("ok")]
    take(step, system)  # a broken block naming a memory tool is a malformed memory call, not an agent error
    assert client.sent[-1][-1]["content"].startswith("Error: recall: arguments are not JSON")
    assert ledger.memory_tool_fields()["memory_tool_calls"] == 2


def test_a_step_without_memory_tools_leaves_the_row_unchanged():
    client = Scripted(native(("recall", "{}")))
    ledger = Ledger()
    step = AgentStep(client, None, None, ledger, len, AssemblyOptions(prompt_caching=False), send=client.send,
                     measure=lambda m: 0)
    _, completion = take(step)
    assert completion.tool_calls[0].name == "recall"  # not a memory tool here: the benchmark's to answer
    assert "memory_tool_calls" not in ledger.record_fields() and json.dumps(ledger.memory_tool_fields()) == "{}"


def test_a_code_agents_block_that_only_calls_the_memory_tool_is_answered_as_its_output():
    call = "Let me check.\n```python\nprint(recall('change an order'))\n```"
    client = Scripted(text(call), text("```python\napis.supervisor.show_profile()\n```"))
    step, ledger = step_with(client, "code")
    _, completion = take(step)
    assert "show_profile" in completion.content  # only this goes to the engine
    assert client.sent[1][-2:] == [{"role": "assistant", "content": call},
                                   {"role": "user", "content": "Output:\n- [g7] " + LESSON.text}]
    assert step.exchanges[0].arguments == {"query": "change an order"}  # positional, in the schema's order
    for code in ("x = recall('a')\nprint(x)", "print(recall(query=name))", "recall('a'"):  # the engine's to run
        client.replies = [text(f"```python\n{code}\n```")]
        assert take(step)[1].content.endswith(f"{code}\n```")
    assert ledger.memory_tool_fields()["memory_tool_calls"] == 1
