"""The scripted models' prompt tokens (harness/scripted/token_count.py): kept per message, summed, and equal to
LiteLLM's own count of the whole prompt at every step of a real τ² conversation; a count that stops adding up
falls back to LiteLLM's."""

from __future__ import annotations

import json

import litellm
import pytest
from tau2.data_model.message import ToolCall

from harness.benchmarks.tau2.data import TaskSource
from harness.scripted import token_count
from harness.scripted.oracle import _countable


@pytest.fixture(autouse=True)
def fresh_counts(monkeypatch):
    monkeypatch.setattr(token_count, "_counts", type(token_count._counts)())
    monkeypatch.setattr(token_count, "_adds_up", None)


def conversation() -> list[dict]:
    """A retail task's gold calls as an agent makes them: the policy (and a long memory block past LiteLLM's
    exact-count limit), the user's request, each call and its tool reply, as the scripted models count them."""
    source = TaskSource("retail")
    env, task = source.environment(), source.load_tasks("test")[0]
    memory = " ".join(f"- guideline {i}: check the order status before any change." for i in range(3000))
    messages = [{"role": "system", "content": env.get_policy() + "\n\nLessons:\n" + memory},
                {"role": "user", "content": str(task.user_scenario)}]
    for i, action in enumerate(a for a in task.evaluation_criteria.actions if a.requestor == "assistant"):
        call = ToolCall(id=f"call_{i}", name=action.name, arguments=action.arguments)
        messages.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": json.dumps(call.arguments)}}]})
        messages.append({"role": "tool", "content": env.get_response(call).content, "tool_call_id": call.id})
    messages.append({"role": "assistant", "content": "Your request has been handled."})
    return _countable(messages)


def test_kept_counts_sum_to_litellm_s_count_at_every_step():
    messages = conversation()
    assert len(messages) > 6 and len(messages[0]["content"]) > 100_000
    for step in range(len(messages) + 1):
        prefix = messages[:step]
        assert token_count.prompt_tokens("gpt-4o", prefix) == litellm.token_counter(model="gpt-4o", messages=prefix)
    assert token_count._adds_up is True
    assert len(token_count._counts) == len(messages)  # each message counted once, however many steps it was in


def test_a_count_that_does_not_add_up_is_never_used(monkeypatch):
    real = litellm.token_counter
    monkeypatch.setattr(litellm, "token_counter", lambda **kw: real(**kw) + 7 * len(kw.get("messages") or []) ** 2)
    messages = conversation()[:4]
    assert token_count.prompt_tokens("gpt-4o", messages) == litellm.token_counter(model="gpt-4o", messages=messages)
    assert token_count._adds_up is False
    assert token_count.prompt_tokens("gpt-4o", messages[:3]) == litellm.token_counter(model="gpt-4o",
                                                                                        messages=messages[:3])
