"""Prompted (text) tool calling, for models whose chat template has no tool support.

The tool schemas go into the system prompt and the model answers in plain text, in one of two forms:

    a message for the user: any text that does not contain the tags below;
    exactly one tool call: the whole reply is one block
        <tool_call>
        {"name": "<tool name>", "arguments": {<JSON object>}}
        </tool_call>

The parser is strict (nothing around the block, one block, known tool, JSON object arguments, no other
keys) so that a sloppy answer becomes a recorded agent error rather than a guess. Argument values are
not checked against the schema: as with native tool calls, the environment answers a bad argument
with a tool error the model can read. Benchmark-agnostic: it sees only OpenAI-style tool schemas and
chat messages.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Iterable

OPEN, CLOSE = "<tool_call>", "</tool_call>"
_BLOCK = re.compile(r"\A\s*<tool_call>(?P<body>.*?)</tool_call>\s*\Z", re.S)


class PromptedParseError(ValueError):
    """The reply is neither a plain message nor exactly one well-formed tool call."""


@dataclass(frozen=True)
class PromptedCall:
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class PromptedReply:
    message: str | None = None  # text for the user, when the reply is not a tool call
    call: PromptedCall | None = None


def render_tools(tools: Iterable[dict[str, Any]]) -> str:
    """The system-prompt block that replaces native tool schemas (stable text: part of the cached prefix)."""
    specs = []
    for tool in tools:
        fn = tool.get("function", tool)
        specs.append(json.dumps({"name": fn["name"], "description": fn.get("description", ""),
                                 "parameters": fn.get("parameters", {})}, ensure_ascii=False, sort_keys=True))
    return (
        "<tools>\n" + "\n".join(specs) + "\n</tools>\n\n"
        "# How to answer\n"
        "Each reply is EITHER a message to the user in plain text, OR exactly one tool call and nothing else, "
        "written as:\n"
        f'{OPEN}\n{{"name": "<tool name>", "arguments": {{<arguments as a JSON object>}}}}\n{CLOSE}\n'
        "Call one tool per reply; you will see its result in the next message. "
        "Never write text before or after a tool call."
    )


def parse_reply(text: str | None, tool_names: Iterable[str]) -> PromptedReply:
    """Strictly parse one model reply; raise PromptedParseError with the reason otherwise."""
    if text is None or not text.strip():
        raise PromptedParseError("empty reply: no message and no tool call")
    opens, closes = text.count(OPEN), text.count(CLOSE)
    if opens == 0 and closes == 0:
        return PromptedReply(message=text.strip())
    if opens > 1 or closes > 1:
        raise PromptedParseError(f"{max(opens, closes)} tool-call blocks; exactly one per reply is allowed")
    match = _BLOCK.match(text)
    if match is None:
        raise PromptedParseError("a tool call must be the whole reply: one <tool_call>...</tool_call> block, "
                                 "no text around it")
    try:
        obj = json.loads(match.group("body"))
    except json.JSONDecodeError as exc:
        raise PromptedParseError(f"tool call is not valid JSON ({exc.msg} at char {exc.pos})") from None
    if not isinstance(obj, dict):
        raise PromptedParseError("tool call must be a JSON object with 'name' and 'arguments'")
    extra = set(obj) - {"name", "arguments"}
    if extra:
        raise PromptedParseError(f"tool call has unexpected keys {sorted(extra)}; only 'name' and 'arguments'")
    name, args = obj.get("name"), obj.get("arguments", {})
    if not isinstance(name, str) or not name:
        raise PromptedParseError("tool call without a tool name")
    known = set(tool_names)
    if name not in known:
        raise PromptedParseError(f"unknown tool {name!r}")
    if not isinstance(args, dict):
        raise PromptedParseError(f"tool call {name!r}: 'arguments' must be a JSON object")
    return PromptedReply(call=PromptedCall(name=name, arguments=args))


def call_block(text: str | None) -> str | None:
    """The body of a reply that is exactly one tool-call block (unparsed); None for any other reply."""
    match = _BLOCK.match(text or "")
    return match.group("body") if match and (text or "").count(OPEN) == 1 else None


def add_tools(system: str, tools: Iterable[dict[str, Any]]) -> str:
    """A system prompt whose <tools> block (render_tools) also lists `tools` (the step's memory tools)."""
    specs = render_tools(tools).split("\n</tools>")[0].removeprefix("<tools>\n")
    head, sep, tail = system.partition("\n</tools>")
    return f"{head}\n{specs}{sep}{tail}" if sep and specs else system


def render_call(name: str, arguments: dict[str, Any]) -> str:
    """A past tool call as the model would have written it (so the history teaches the format)."""
    return f"{OPEN}\n{json.dumps({'name': name, 'arguments': arguments}, ensure_ascii=False)}\n{CLOSE}"


def to_text_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """OpenAI chat messages with tool calls/results -> plain system/user/assistant text messages.

    Chat templates without tool support (e.g. SmolLM2's) cannot render `tool_calls` or the `tool` role:
    a past call becomes its text form, a tool result becomes a user turn labelled as such.
    """
    out: list[dict[str, Any]] = []
    names: dict[str, str] = {}
    for msg in messages:
        role = msg.get("role")
        if role == "assistant" and msg.get("tool_calls"):
            calls = msg["tool_calls"]
            parts = []
            for call in calls:
                fn = call.get("function", call)
                args = fn.get("arguments", {})
                args = json.loads(args) if isinstance(args, str) and args.strip() else (args or {})
                names[call.get("id", "")] = fn["name"]
                parts.append(render_call(fn["name"], args))
            out.append({"role": "assistant", "content": "\n".join(parts)})
        elif role == "tool":
            name = names.get(msg.get("tool_call_id", ""), "tool")
            out.append({"role": "user", "content": f"[result of tool {name}]\n{msg.get('content') or ''}"})
        else:
            out.append({"role": role, "content": msg.get("content") or ""})
    return out
