"""Reflector and Curator: prompts, JSON schemas, and what each is shown.

The Generator is the benchmark agent itself: it sees the rendered playbook at every step and is asked
to cite the bullet ids it relies on; `cited_ids` reads those citations back from its messages.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from strategies.ace.llm import JsonLLM
from strategies.ace.deltas import OPERATIONS
from strategies.ace.playbook import SECTION_SETS, Playbook
from strategies.base import Trajectory

TAGS = ("helpful", "harmful", "neutral")
_ID_IN_TEXT = re.compile(r"\b([a-z]+-\d{5,})\b")
_BULLET_IDS = re.compile(r"bullet_ids\W{0,4}\[([^\]]*)\]")  # the structured field: bullet_ids: ["id", ...]

REFLECTOR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "reasoning": {"type": "string"},
        "error_analysis": {"type": "string"},
        "root_cause": {"type": "string"},
        "correct_approach": {"type": "string"},
        "key_insight": {"type": "string"},
        "bullet_tags": {"type": "array", "items": {
            "type": "object",
            "properties": {"id": {"type": "string"}, "tag": {"type": "string", "enum": list(TAGS)}},
            "required": ["id", "tag"]}},
    },
    "required": ["error_analysis", "key_insight", "bullet_tags"],
}

# Operations are validated one by one in deltas.py, so the envelope is strict and the items loose:
# one bad operation must not throw away the good ones beside it.
def curator_schema(operations: tuple[str, ...] = OPERATIONS, sections: str = "generic") -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "reasoning": {"type": "string"},
            "operations": {"type": "array", "items": {
                "type": "object",
                "properties": {"type": {"type": "string", "enum": list(operations)},
                               "section": {"type": "string", "enum": list(SECTION_SETS[sections])},
                               "id": {"type": "string"}, "content": {"type": "string"}},
                "required": ["type"]}},
        },
        "required": ["operations"],
    }


CURATOR_SCHEMA = curator_schema()
_CURATOR_CHECK = {**CURATOR_SCHEMA, "properties": {**CURATOR_SCHEMA["properties"],
                                                   "operations": {"type": "array", "items": {"type": "object"}}}}

REFLECTOR_SYSTEM = """You are the Reflector of an agent that learns from its own runs (ACE).
You get one finished episode of the agent and the playbook bullets the agent cited.
Diagnose what went right or wrong, name the root cause, the correct approach and one reusable key insight.
Tag each cited bullet: "helpful" if following it helped, "harmful" if it misled the agent, "neutral" otherwise.
Answer with one JSON object only: {"reasoning": str, "error_analysis": str, "root_cause": str,
"correct_approach": str, "key_insight": str, "bullet_tags": [{"id": str, "tag": "helpful"|"harmful"|"neutral"}]}"""


def curator_system(operations: tuple[str, ...] = OPERATIONS, sections: str = "generic") -> str:
    """The Curator's instructions. ADD-only (paper mode, as the reference) unless UPDATE/REMOVE are allowed."""
    lines = [f'  {{"type": "ADD", "section": <one of {", ".join(SECTION_SETS[sections])}>, '
             '"content": "<one specific, reusable lesson>"}']
    if "UPDATE" in operations:
        lines.append('  {"type": "UPDATE", "id": "<existing id>", "content": "<corrected text of that bullet>"}')
    if "REMOVE" in operations:
        lines.append('  {"type": "REMOVE", "id": "<existing id>"}')
    advice = "Add only what is new and not already covered by the playbook."
    if "UPDATE" in operations:
        advice += " Prefer UPDATE over a near-duplicate ADD."
    if "REMOVE" in operations:
        advice += " REMOVE bullets that proved harmful."
    return ("You are the Curator of an agent's playbook (ACE). You never rewrite the playbook;\n"
            "you propose a few delta operations from the Reflector's analysis:\n" + "\n".join(lines) + "\n"
            + advice + " Return an empty list when nothing should change.\n"
            'Answer with one JSON object only: {"reasoning": str, "operations": [...]}')


CURATOR_SYSTEM = curator_system()


@dataclass(frozen=True)
class Reflection:
    error_analysis: str
    key_insight: str
    tags: dict[str, str] = field(default_factory=dict)  # only for bullets the Generator cited
    ignored_tags: tuple[dict[str, Any], ...] = ()  # tags on ids it did not cite
    detail: dict[str, Any] = field(default_factory=dict)
    usage: dict[str, int] = field(default_factory=dict)


def cited_in_turns(trajectory: Trajectory, playbook: Playbook) -> list[list[str]]:
    """Per assistant turn, the playbook's bullet ids it cited: the `bullet_ids: [...]` field first, then ids
    written anywhere else in the turn. A turn that calls a tool may carry text too (τ²: `raw_content`, since
    tau2 keeps a message to text or calls), so both places are read."""
    turns = []
    for message in trajectory.messages:
        if message.get("role") != "assistant":
            continue
        found: dict[str, None] = {}
        for text in (message.get("content"), message.get("raw_content")):
            if not isinstance(text, str):
                continue
            fields = " ".join(_BULLET_IDS.findall(text))
            for bullet_id in _ID_IN_TEXT.findall(fields) + _ID_IN_TEXT.findall(text):
                if bullet_id in playbook:
                    found.setdefault(bullet_id, None)
        turns.append(list(found))
    return turns


def cited_ids(trajectory: Trajectory, playbook: Playbook) -> list[str]:
    """Bullet ids the agent cited in any of its own turns, in first-cited order, that exist in the playbook."""
    return list(dict.fromkeys(i for turn in cited_in_turns(trajectory, playbook) for i in turn))


def cited_steps(trajectory: Trajectory, playbook: Playbook) -> int:
    """Agent turns that cited at least one bullet: 0 over a whole run means the counters can never move."""
    return sum(bool(turn) for turn in cited_in_turns(trajectory, playbook))


def render_trajectory(trajectory: Trajectory, max_chars: int) -> str:
    """Messages as plain lines; the middle is cut when too long (start and end tell the most)."""
    lines = []
    for m in trajectory.messages:
        role = m.get("role", "?")
        text = m.get("content") or m.get("raw_content")
        if text:
            lines.append(f"{role}: {text}")
        for call in m.get("tool_calls") or []:
            fn = call.get("function", call) if isinstance(call, dict) else {}
            lines.append(f"{role} -> tool {fn.get('name')}({fn.get('arguments')})")
    text = "\n".join(lines)
    if len(text) <= max_chars:
        return text
    half = max_chars // 2
    return f"{text[:half]}\n[... {len(text) - 2 * half} characters cut ...]\n{text[-half:]}"


def reflect(llm: JsonLLM, trajectory: Trajectory, playbook: Playbook, cited: list[str], *,
            allow_ground_truth: bool, max_trajectory_chars: int, gold: str | None = None) -> Reflection:
    """Without ground truth the Reflector sees the episode (what the agent saw and did) and the cited
    bullets only: no reward, no evaluator report, no gold solution."""
    parts = [f"Task: {trajectory.task.description}",
             f"Episode (agent = assistant):\n{render_trajectory(trajectory, max_trajectory_chars)}"]
    if allow_ground_truth:  # the evaluator's verdict is derived from the gold solution
        parts.append(f"Outcome: reward={trajectory.reward}, success={trajectory.success}")
        if trajectory.feedback:
            parts.append(f"Evaluator report: {trajectory.feedback}")
        if gold:  # as ace-agent/ace (the target) and ace-appworld (the task's solution code) do
            parts.append(f"Ground truth (the gold solution of this task):\n{gold}")
    else:
        parts.append("Outcome: not given (no ground truth); judge from the episode itself.")
    bullets = "\n".join(playbook.bullet(i).line for i in cited) or "(the agent cited no bullets)"
    parts.append(f"Bullets the agent cited:\n{bullets}")
    answer, usage = llm.ask(REFLECTOR_SYSTEM, "\n\n".join(parts), REFLECTOR_SCHEMA, "reflector")
    tags: dict[str, str] = {}
    ignored = []
    for item in answer["bullet_tags"]:
        if item["id"] in cited:
            tags[item["id"]] = item["tag"]
        else:
            ignored.append(dict(item))
    detail = {k: answer.get(k) for k in ("reasoning", "root_cause", "correct_approach") if answer.get(k)}
    return Reflection(answer["error_analysis"], answer["key_insight"], tags, tuple(ignored), detail, usage)


def curate(llm: JsonLLM, playbook: Playbook, reflection: Reflection, *, tokens: int,
           token_budget: int | None, task: str, operations: tuple[str, ...] = OPERATIONS,
           sections: str = "generic", progress: tuple[int, int] | None = None,
           episode: str | None = None) -> tuple[list[Any], dict[str, int]]:
    """The Curator sees what the reference's does: the playbook and its statistics, the size it should stay
    within, how far training has gone, the task, the reflection, and (AppWorld) the whole conversation."""
    stats = {**playbook.stats(), "tokens": tokens, "token_budget": token_budget}
    summary = {"error_analysis": reflection.error_analysis, "key_insight": reflection.key_insight, **reflection.detail}
    size = (f"The whole playbook should stay within {token_budget} tokens; it is {tokens} tokens now."
            if token_budget else f"The playbook is {tokens} tokens now; no size limit was set.")
    parts = [f"Current playbook:\n{playbook.render(cite=False) or '(empty)'}",
             f"Playbook statistics: {json.dumps(stats)}", size]
    if progress is not None:
        parts.append(f"Training progress: this is sample {progress[0]} of {progress[1]}.")
    parts.append(f"Task just attempted: {task}")
    if episode:
        parts.append(f"The full conversation of that attempt (agent = assistant):\n{episode}")
    parts.append(f"Reflection:\n{json.dumps(summary, ensure_ascii=False)}")
    user = "\n\n".join(parts)
    answer, usage = llm.ask(curator_system(operations, sections), user, curator_schema(operations, sections),
                            "curator", check=_CURATOR_CHECK)
    return list(answer["operations"]), usage
