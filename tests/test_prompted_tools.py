"""Prompted (text) tool calls: the strict parser, the prompt block, and the history rewrite."""

import json

import pytest

from harness.serving.prompted_tools import (PromptedParseError, parse_reply, render_call, render_tools,
                                    to_text_messages)

TOOLS = ["get_order_details", "cancel_pending_order"]
SCHEMAS = [{"type": "function", "function": {
    "name": "get_order_details", "description": "Look up an order.",
    "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}}}]


def call_text(obj) -> str:
    return f"<tool_call>\n{json.dumps(obj)}\n</tool_call>"


def test_plain_text_is_a_message():
    reply = parse_reply("  Sure, what is your order id?\n", TOOLS)
    assert reply.message == "Sure, what is your order id?" and reply.call is None


def test_one_valid_call():
    reply = parse_reply(call_text({"name": "get_order_details", "arguments": {"order_id": "#W1"}}), TOOLS)
    assert reply.message is None
    assert (reply.call.name, reply.call.arguments) == ("get_order_details", {"order_id": "#W1"})


def test_call_without_arguments_means_empty_object():
    assert parse_reply(call_text({"name": "get_order_details"}), TOOLS).call.arguments == {}


def test_render_call_round_trips_through_the_parser():
    text = render_call("cancel_pending_order", {"order_id": "#W2", "reason": "no longer needed"})
    call = parse_reply(text, TOOLS).call
    assert (call.name, call.arguments) == ("cancel_pending_order", {"order_id": "#W2", "reason": "no longer needed"})


@pytest.mark.parametrize("text, reason", [
    ("", "empty"),
    ("   \n ", "empty"),
    (None, "empty"),
    ("Let me check. " + call_text({"name": "get_order_details", "arguments": {}}), "whole reply"),
    (call_text({"name": "get_order_details", "arguments": {}}) + " Done!", "whole reply"),
    (call_text({"name": "get_order_details", "arguments": {}}) * 2, "2 tool-call blocks"),
    (call_text({"name": "transfer_money", "arguments": {}}), "unknown tool"),
    ("<tool_call>\n{\"name\": \"get_order_details\", \"arguments\": {order_id: 1}}\n</tool_call>", "not valid JSON"),
    ("<tool_call>\n{\"name\": \"get_order_details\"", "whole reply"),  # unterminated block
    ("</tool_call>", "whole reply"),
    (call_text(["get_order_details"]), "JSON object"),
    (call_text({"name": "get_order_details", "arguments": "order_id=#W1"}), "'arguments' must be a JSON object"),
    (call_text({"name": "", "arguments": {}}), "without a tool name"),
    (call_text({"tool": "get_order_details", "arguments": {}}), "unexpected keys"),
    (call_text({"name": "get_order_details", "arguments": {}, "id": "x"}), "unexpected keys"),
])
def test_malformed_and_adversarial_replies_are_rejected_with_a_reason(text, reason):
    with pytest.raises(PromptedParseError, match=reason):
        parse_reply(text, TOOLS)


def test_tool_names_come_from_the_caller_not_the_reply():
    text = call_text({"name": "get_order_details", "arguments": {}})
    with pytest.raises(PromptedParseError, match="unknown tool"):
        parse_reply(text, [])  # e.g. a user simulator without tools


def test_render_tools_lists_every_schema_and_the_format():
    block = render_tools(SCHEMAS)
    assert '"name": "get_order_details"' in block and '"required": ["order_id"]' in block
    assert "<tool_call>" in block and "</tool_call>" in block
    assert render_tools(SCHEMAS) == block  # deterministic: part of the cacheable prefix


def test_history_rewrite_for_templates_without_tools():
    history = [
        {"role": "system", "content": "policy"},
        {"role": "user", "content": "cancel #W1"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function",
             "function": {"name": "get_order_details", "arguments": "{\"order_id\": \"#W1\"}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "{\"status\": \"pending\"}"},
    ]
    out = to_text_messages(history)
    assert [m["role"] for m in out] == ["system", "user", "assistant", "user"]
    assert all(isinstance(m["content"], str) and set(m) == {"role", "content"} for m in out)
    assert parse_reply(out[2]["content"], TOOLS).call.arguments == {"order_id": "#W1"}
    assert out[3]["content"].startswith("[result of tool get_order_details]") and "pending" in out[3]["content"]
