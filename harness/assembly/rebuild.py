"""`answer_mode=rebuild` on a chat with tool calls (τ²): the reply to the user regenerated from a clean request
(seed 002's answer stage). AppWorld's code agent builds its own clean request (its agent.py)."""

from __future__ import annotations

from typing import Any, Optional

from harness.assembly.layout import place
from harness.assembly.observations import cut_observation
from harness.assembly.summary import call_text, summarise

Messages = list[dict[str, Any]]


def turn_has_tool_calls(history: Messages) -> bool:
    """Whether the agent called a tool since the latest user message."""
    latest = max((i for i, m in enumerate(history) if m.get("role") == "user"), default=-1)
    return any(m.get("role") == "assistant" and m.get("tool_calls") for m in history[latest + 1:])


def rebuild_request(system: str, history: Messages, memory: str, *, placement: str, model: str,
                    max_chars: Optional[int] = None) -> Messages:
    """A clean request for the reply to the user: the same system message, a code-made summary of the
    conversation before the latest user message, the raw facts this turn's tool calls returned (each cut by
    `cut_observation`), and the user's latest message. No tool messages, no tool calls, no tool schemas."""
    latest = max((i for i, m in enumerate(history) if m.get("role") == "user"), default=-1)
    before, question, turn = history[:max(latest, 0)], history[latest] if latest >= 0 else None, history[latest + 1:]
    names, facts = {}, []
    for m in turn:
        if m.get("role") == "assistant":
            for call in m.get("tool_calls") or []:
                names[call.get("id", "")] = call_text(call)
        elif m.get("role") == "tool":
            name, args = names.get(m.get("tool_call_id", ""), ("tool", ""))
            facts.append(f"{name}({args}) returned:\n{cut_observation(str(m.get('content') or ''), max_chars)}")
    parts = []
    if before:
        parts.append("The conversation so far (summary made by code):\n" + summarise(before))
    parts.append("What your tool calls in this turn returned (raw):\n\n" + ("\n\n".join(facts) or "(nothing)"))
    parts.append("The user's latest message:\n" + str((question or {}).get("content") or ""))
    parts.append("Write your reply to the user now, using these facts. Reply with the message only.")
    return place(system, [{"role": "user", "content": "\n\n".join(parts)}], memory, placement, model)
