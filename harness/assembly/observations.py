"""The one cut of long tool / code outputs: τ²'s tool results and AppWorld's printed output say the same."""

from __future__ import annotations

from typing import Any, Optional

TRUNCATED = "[truncated]"  # the marker tests and readers look for


def cut_observation(text: str, limit: Optional[int], hint: str = "") -> str:
    """`text` cut to `limit` characters with a note that the rest exists, was not shown, and must not be
    guessed. limit None / <= 0: unchanged."""
    if not limit or limit <= 0 or len(text) <= limit:
        return text
    return (f"{text[:limit]}\n{TRUNCATED} showing {limit} of {len(text)} characters; the rest was omitted and "
            f"is not shown to you. Do not guess what it said.{(' ' + hint) if hint else ''}")


def cut_tool_results(history: list[dict[str, Any]], limit: Optional[int]) -> list[dict[str, Any]]:
    """Every tool-role message's content cut by `cut_observation` (a LiteLLM chat with tool messages)."""
    if not limit:
        return history
    return [{**m, "content": cut_observation(str(m.get("content") or ""), limit)} if m.get("role") == "tool" else m
            for m in history]
