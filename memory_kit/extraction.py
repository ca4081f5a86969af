"""Guideline extraction (ALTK-Evolve style): one LLM call per finished trajectory.

A failed episode yields 1-3 guidelines, a successful one at most 2. Each has text, rationale, category
(strategy / recovery / optimization) and trigger; we add the id, the source task id and the source task
text (what `core_retrieval` later compares new tasks against), and support 1.

By default the extractor sees the trajectory only, as ALTK-Evolve's does: no reward, no evaluator report; it
judges the outcome itself (0-3 guidelines). `ground_truth=True` adds the outcome, reward and evaluator feedback.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, Field

from strategies import Guideline, Trajectory
from strategies.base import first_user_text
from memory_kit.llm_json import TextLLM, ask_json

MAX_FOR_FAILURE = 3
MAX_FOR_SUCCESS = 2

SYSTEM = """You study one finished episode of a tool-using customer-service agent and write guidelines that \
would help the agent on FUTURE, DIFFERENT tasks of the same kind.

Rules:
- If the outcome is not given, judge from the episode itself whether the agent met the user's goal within its \
policy.
- If the episode FAILED: write 1 to 3 guidelines that would have prevented the failure.
- If the episode SUCCEEDED: write 0 to 2 guidelines capturing what made it work (0 if nothing is reusable).
- Each guideline is one imperative sentence, general: no user names, order ids or amounts from this episode.
- category is one of: "strategy" (how to approach a kind of task), "recovery" (how to get out of an error \
or dead end), "optimization" (how to reach the goal with fewer steps or calls).
- trigger says when the guideline applies; rationale says why, citing what happened in the episode.

Answer with JSON only:
{"guidelines": [{"text": "...", "rationale": "...", "category": "strategy", "trigger": "..."}]}"""


class ExtractedItem(BaseModel):
    text: str = Field(min_length=3)
    rationale: str = ""
    category: Literal["strategy", "recovery", "optimization"]
    trigger: str = ""


class ExtractionAnswer(BaseModel):
    guidelines: list[ExtractedItem]


@dataclass(frozen=True)
class Extraction:
    source: str  # the trajectory's key (task id, plus trial when there are several)
    guidelines: tuple[Guideline, ...]
    error: str | None = None  # set when the trajectory was skipped


def render_trajectory(traj: Trajectory, max_chars: int = 12000, max_tool_chars: int = 600) -> str:
    """The conversation as compact text; long tool results and the middle of very long episodes are cut."""
    lines = []
    for m in traj.messages:
        role = m.get("role", "?")
        content = m.get("content")
        if isinstance(content, list):  # multi-part content: keep the text parts
            content = " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
        content = str(content or "").strip()
        if role == "tool" and len(content) > max_tool_chars:
            content = content[:max_tool_chars] + " ...[cut]"
        for call in (m.get("tool_calls") or []) if role == "assistant" else []:  # a user's own call: not the agent's
            fn = call.get("function", call) if isinstance(call, dict) else {}
            lines.append(f"[{role} -> tool] {fn.get('name')}({_args(fn.get('arguments'))})")
        if content:
            lines.append(f"[{role}] {content}")
    text = "\n".join(lines)
    if len(text) > max_chars:
        half = max_chars // 2
        text = text[:half] + "\n...[middle of the episode cut]...\n" + text[-half:]
    return text


def _args(arguments: Any) -> str:
    if isinstance(arguments, str):
        return arguments
    return json.dumps(arguments, ensure_ascii=False)


def extraction_messages(traj: Trajectory, ground_truth: bool = False) -> list[dict[str, str]]:
    """The extractor's prompt: the trajectory; with ground_truth also the outcome, reward and evaluator report."""
    if ground_truth:
        outcome = "SUCCEEDED" if traj.success else "FAILED"
        known = (f"Outcome: {outcome} (reward {traj.reward:g})\n"
                 + (f"Evaluator feedback: {traj.feedback}\n" if traj.feedback else ""))
    else:
        known = "Outcome: not given\n"
    user = f"Task: {traj.task.description}\n{known}\nEpisode:\n{render_trajectory(traj)}"
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


def _count_check(success: bool | None):
    """success None (outcome not shown to the extractor): anything from 0 to the failure maximum."""
    low, high = {True: (0, MAX_FOR_SUCCESS), False: (1, MAX_FOR_FAILURE), None: (0, MAX_FOR_FAILURE)}[success]

    def check(answer: ExtractionAnswer) -> str | None:
        n = len(answer.guidelines)
        if not low <= n <= high:
            outcome = {True: "a successful episode", False: "a failed episode", None: "an episode"}[success]
            return f"{outcome} needs {low} to {high} guidelines, got {n}"
        return None

    return check


def extract(traj: Trajectory, llm: TextLLM, source: str | None = None, ground_truth: bool = False) -> Extraction:
    """One LLM call (plus at most one retry) for one trajectory; never raises on bad model output."""
    source = source or traj.task.task_id
    answer = ask_json(llm, extraction_messages(traj, ground_truth), ExtractionAnswer,
                      _count_check(traj.success if ground_truth else None), what=f"extraction {source}")
    if answer.value is None:
        return Extraction(source, (), answer.error)
    guidelines = tuple(
        Guideline(id=f"x-{_slug(source)}-{i}", text=item.text.strip(), category=item.category,
                  support=1, source_task_ids=(traj.task.task_id,), rationale=item.rationale.strip(),
                  trigger=item.trigger.strip(), source_task_text=traj.task.description)
        for i, item in enumerate(answer.value.guidelines, start=1)
    )
    return Extraction(source, guidelines)


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in str(text))


def query_of(trajectory: Trajectory) -> str:
    """The task as the agent saw it: the statement, else the user's first message."""
    return trajectory.task.description or first_user_text(trajectory.messages)
