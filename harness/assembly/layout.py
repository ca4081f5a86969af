"""Where memory goes in a request, and what a conversation's turns are: a benchmark's `Layout`.

`assemble` takes a Layout: `place` builds the request from the system text, the memory-free history and the
memory block; `split` and `summarise` tell the context policy what a turn is and how folded turns read.
`chat_layout` is the layout of a LiteLLM chat with tool messages (τ²'s agents); AppWorld's code agent builds
its own from the same `place` (harness/benchmarks/appworld/agent.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

from harness.assembly.options import check
from harness.assembly.providers import trailing_role
from harness.assembly.summary import summarise

Messages = list[dict[str, Any]]


def memory_first(content: object, memory: str) -> str:
    """The first user message with the memory block before its text."""
    return f"{memory}\n\n{content or ''}"


def place(system: str, history: Messages, memory: str, placement: str, model: str, *, policy_gap: str = "\n",
          into_first_user: Callable[[object, str], str] = memory_first) -> Messages:
    """[system, *history] with the memory block where `placement` says: after the system text (joined by
    `policy_gap`), inside the first user message (`into_first_user(its content, memory)`), or as the last
    message (a user message for Claude, see trailing_role)."""
    check(placement)
    if memory and placement == "after_policy":
        system = f"{system}{policy_gap}{memory}"
    messages = [{"role": "system", "content": system}, *history]
    if not memory or placement == "after_policy":
        return messages
    if placement == "first_user_message":
        at = next((i for i, m in enumerate(messages) if m.get("role") == "user"), None)
        if at is None:  # no user message yet: the block opens the conversation
            return [messages[0], {"role": "user", "content": memory}, *messages[1:]]
        first = messages[at]
        return [*messages[:at], {**first, "content": into_first_user(first.get("content"), memory)}, *messages[at + 1:]]
    return [*messages, {"role": trailing_role(model), "content": memory}]


def split_units(history: Messages) -> tuple[Messages, list[Messages], int]:
    """(head, units, latest) where head runs through the first user message, units are the rest grouped so
    that an assistant message keeps its tool results, and units[latest] starts the latest user message
    (-1 when the first user message is the latest: every unit then belongs to the current turn)."""
    first = next((i for i, m in enumerate(history) if m.get("role") == "user"), len(history) - 1)
    head, units = history[: first + 1], list[Messages]()
    for m in history[first + 1:]:
        if m.get("role") == "tool" and units:
            units[-1].append(m)
        else:
            units.append([m])
    latest = max((i for i, u in enumerate(units) if u[0].get("role") == "user"), default=-1)
    return head, units, latest


@dataclass(frozen=True)
class Layout:
    """A benchmark's conversation as the assembly sees it (see the module doc)."""

    place: Callable[[str, Messages, str], Messages]  # (system, history, memory text) -> the request
    split: Callable[[Messages], tuple[Messages, list[Messages], int]] = split_units  # see split_units
    summarise: Callable[[Sequence[dict[str, Any]]], str] = summarise  # folded messages -> summary lines


def chat_layout(placement: str, model: str) -> Layout:
    """A LiteLLM chat with tool messages (τ²'s agents): `place`, `split_units` and `summarise` as they are."""
    check(placement)
    return Layout(lambda system, history, memory: place(system, history, memory, placement, model))
