"""Past train episodes as memory items: condensed to one line each, for `exp_rag` and `long_context`.

An *experiences* artifact is the guideline family's JSONL (memory_kit/memory_file.py) with `_meta.kind:
experiences`, one row per train episode: `text` the condensed episode (what the task asked, the agent's tool
calls in order, its last reply), `source_task_text` the task as the agent first saw it (what retrieval compares
with), `rationale` the episode's outcome (`success` / `failure`, or "" when built without labels). It is written
by `python -m harness.memory.experiences` (harness/memory/experiences.py) from a `none` run on train.

One line per episode, because the harness's memory block is bullet lines `- [id] text` (what the ledger's
memory-token count and the simulated world read); Evo-Memory keeps the whole trajectory text (docs/strategies.md).
"""

from __future__ import annotations

import json
from typing import Any, Optional, Sequence

from strategies.base import first_user_text
from strategies import Guideline, Trajectory
from strategies.frame import Frame

KIND = "experiences"
DEFAULT_MAX_CHARS = 1500  # ours: a long τ² episode condensed to about 400 tokens
_ARG_CHARS = 80  # one tool call's arguments, shown up to this many characters


def _calls(message: dict[str, Any]) -> list[str]:
    out = []
    for call in message.get("tool_calls") or ():
        fn = call.get("function") if isinstance(call, dict) else None
        if not isinstance(fn, dict) or not fn.get("name"):
            continue
        args = fn.get("arguments") or ""
        if not isinstance(args, str):
            args = json.dumps(args, sort_keys=True)
        args = " ".join(args.split())
        out.append(f"{fn['name']}({args[:_ARG_CHARS] + '...' if len(args) > _ARG_CHARS else args})")
    return out


def _flat(text: str) -> str:
    return " ".join(str(text).split())


def condense(trajectory: Trajectory, max_chars: int = DEFAULT_MAX_CHARS) -> str:
    """One line: the task, the agent's tool calls in order and its last reply, cut to `max_chars`."""
    task = _flat(trajectory.task.description or first_user_text(trajectory.messages))
    calls = [c for m in trajectory.messages if m.get("role") == "assistant" for c in _calls(m)]
    replies = [m.get("content") for m in trajectory.messages
               if m.get("role") == "assistant" and isinstance(m.get("content"), str) and m["content"].strip()]
    parts = [f"Task: {task or '(stated in conversation)'}",
             f"Actions: {' -> '.join(calls) if calls else '(no tool calls)'}"]
    if replies:
        parts.append(f"Last reply: {_flat(str(replies[-1]))}")
    line = " | ".join(parts)
    return line if len(line) <= max_chars else line[:max_chars - 3].rstrip() + "..."


def experience(key: str, trajectory: Trajectory, with_outcome: bool, max_chars: int = DEFAULT_MAX_CHARS
               ) -> Guideline:
    """The artifact row of one episode (`key`: the task id, or `<task>-t<trial>` when a task ran several times)."""
    outcome = "" if not with_outcome or trajectory.success is None else ("success" if trajectory.success
                                                                         else "failure")
    request = trajectory.task.description or first_user_text(trajectory.messages)
    return Guideline(id=f"exp-{key}", text=condense(trajectory, max_chars), rationale=outcome,
                     source_task_ids=(trajectory.task.task_id,), source_task_text=request)


def check_kind(meta: dict[str, Any], path: str | None, strategy: str) -> None:
    """Refuse an artifact that is not an experiences file (e.g. a guideline file passed as memory=)."""
    if meta.get("kind") != KIND:
        raise ValueError(f"strategy {strategy!r} needs an experiences artifact (_meta.kind {KIND!r}); {path} is "
                         f"{meta.get('kind')!r}: build one with `make experiences` and pass "
                         f"+memory_by_strategy.{strategy}=<path> (EXPERIENCES= in make)")


# exp_rag's frame (the header says what the examples are, the instruction how to use them)
FRAME = Frame("past_experiences", "Worked examples: earlier tasks (train) and what the agent did;",
              "reuse what fits this task.", one_line=True)


def render_experiences(items: Sequence[Guideline], note: str = "", with_outcome: bool = True,
                       frame: Frame = FRAME) -> str:
    """The block: one bullet per past episode, outcome first when shown, ids kept for audits."""
    if not items and not note:
        return ""
    lines = []
    for g in items:
        outcome = f"Outcome: {g.rationale} | " if with_outcome and g.rationale else ""
        lines.append(f"- [{g.id}] {outcome}{g.text}")
    return frame.wrap(lines + ([note] if note else []))


def load_experiences(path: Optional[str], strategy: str) -> list[Guideline]:
    """The job's experiences artifact (memory_by_strategy.<strategy>, else memory=), refused if another kind."""
    from memory_kit.memory_file import load_memory

    if not path:
        raise ValueError(f"strategy {strategy!r} needs an experiences artifact: build one with `make experiences` "
                         f"and pass +memory_by_strategy.{strategy}=<path> (EXPERIENCES= in make)")
    items, meta = load_memory(path)
    check_kind(meta, path, strategy)
    return items
