"""The code-made summary that folded conversation turns become (no model writes it)."""

from __future__ import annotations

import json
from typing import Any, Callable, Optional, Sequence

Messages = list[dict[str, Any]]

SUMMARY_RESULT_CHARS = 200  # per tool result folded into the summary
SUMMARY_TEXT_CHARS = 300  # per user / assistant message folded into it
SUMMARY_MAX_LINES = 4096  # upper bound for the search over how many summary lines to keep


def clip(text: object, limit: int) -> str:
    text = " ".join(str(text or "").split())
    return text if len(text) <= limit else f"{text[:limit]}... (cut)"


def call_text(call: dict[str, Any]) -> tuple[str, str]:
    """(name, arguments as JSON text) of one tool call."""
    fn = call.get("function", call)
    args = fn.get("arguments", {})
    if not isinstance(args, str):
        args = json.dumps(args, ensure_ascii=False)
    return fn.get("name", "?"), args


def summarise(messages: Sequence[dict[str, Any]], result_chars: int = SUMMARY_RESULT_CHARS,
              text_chars: int = SUMMARY_TEXT_CHARS) -> str:
    """One line per message of a chat with tool calls: what the user said, what the agent said, which tools
    it called with which arguments, and the first `result_chars` characters of each result."""
    lines, names = [], {}
    for m in messages:
        role = m.get("role")
        if role == "assistant" and m.get("tool_calls"):
            if (m.get("content") or "").strip():
                lines.append(f"- You said: {clip(m['content'], text_chars)}")
            for call in m["tool_calls"]:
                name, args = call_text(call)
                names[call.get("id", "")] = name
                lines.append(f"- You called {name}({clip(args, text_chars)})")
        elif role == "tool":
            name = names.get(m.get("tool_call_id", ""), "tool")
            lines.append(f"  - {name} returned: {clip(m.get('content'), result_chars)}")
        elif role == "user":
            lines.append(f"- The user said: {clip(m.get('content'), text_chars)}")
        elif role == "assistant":
            lines.append(f"- You said: {clip(m.get('content'), text_chars)}")
    return "\n".join(lines)


def summary_message(units: Sequence[Messages], keep_lines: Optional[int] = None,
                    summariser: Callable[[Sequence[dict[str, Any]]], str] = summarise) -> dict[str, Any]:
    """The folded turns as one user message; keep_lines: only the summary's newest lines (the last resort)."""
    n = len(units)
    head = (f"[{n} earlier turn{'s' if n != 1 else ''} summarised by the harness to fit the context window. "
            f"The summary is made by code, not by a model; tool results are cut to their first "
            f"{SUMMARY_RESULT_CHARS} characters and the rest is not shown: do not guess it.]")
    lines = summariser([m for u in units for m in u]).split("\n")
    if keep_lines is not None and keep_lines < len(lines):
        cut = len(lines) - keep_lines
        lines = [f"[the oldest {cut} lines of this summary were dropped to fit the context window]", *lines[cut:]]
    return {"role": "user", "content": head + "\n" + "\n".join(lines)}
