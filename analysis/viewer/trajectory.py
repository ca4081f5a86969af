"""One episode as the agent saw it, from its trajectory file, in one shape for every benchmark.

Two on-disk layouts are read (both written by the harness's adapters, read here as plain JSON):
* τ²: tau2-bench's own results file (`info`, `tasks`, `simulations[0].messages`, `reward_info`);
* AppWorld: `{"format": ..., "instruction", "supervisor", "steps": [{reply, code, observation, ...}], "evaluation"}`.
Anything else is shown as raw JSON. Missing keys are blanks, never errors: formats may gain fields.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_SIM_TAG = re.compile(r"\[simulated: ([^\]]*)\]")
_PAIR = re.compile(r"(\w+)=(\S+)")


@dataclass
class Turn:
    role: str  # system, user, assistant, tool
    text: str = ""
    tool_calls: list[dict] = field(default_factory=list)  # {"name", "arguments" (pretty JSON or code)}
    step: int | None = None  # the agent step (0-based model call) this assistant turn is
    memory: bool = False  # a memory-tool call or its answer: answered by the strategy, never seen by the benchmark


@dataclass
class Conversation:
    layout: str  # "tau2", "appworld" or "unknown"
    turns: list[Turn]
    evaluation: dict[str, Any]
    policy: str = ""  # the system prompt's policy part (τ²), where memory is placed relative to
    raw: Any = None  # the document itself, for layouts this module does not know

    @property
    def step_turns(self) -> dict[int, Turn]:
        return {t.step: t for t in self.turns if t.step is not None}


def inside(root: Path, relative: str) -> Path | None:
    """`root/relative` when it resolves inside `root` (no `..`, no absolute path, no link out); else None."""
    if not relative or "\x00" in relative:
        return None
    base = root.resolve()
    target = (base / relative).resolve()
    return target if target.is_relative_to(base) and target != base else None


def load(run_dir: str | Path, relative: str | None) -> Conversation | None:
    """The conversation of the trajectory a record names (`trajectory`, relative to its run directory)."""
    path = inside(Path(run_dir), relative or "")
    if path is None or not path.is_file():
        return None
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        return Conversation("unknown", [Turn("system", f"unreadable trajectory {relative}: {exc}")], {})
    if isinstance(doc, dict) and isinstance(doc.get("simulations"), list):
        return _tau2(doc)
    if isinstance(doc, dict) and isinstance(doc.get("steps"), list):
        return _appworld(doc)
    return Conversation("unknown", [], {}, raw=doc)


def _arguments(value: Any) -> str:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return value
    return json.dumps(value, indent=1, ensure_ascii=False)


def _tau2(doc: dict) -> Conversation:
    sims = doc.get("simulations") or [{}]
    sim = sims[0] if isinstance(sims[0], dict) else {}
    policy = ((doc.get("info") or {}).get("environment_info") or {}).get("policy") or ""
    turns, step, seen_user = [], 0, False
    for m in sim.get("messages") or []:
        if not isinstance(m, dict):
            continue
        role = str(m.get("role") or "?")
        calls = [{"name": str(c.get("name", "?")), "arguments": _arguments(c.get("arguments"))}
                 for c in (m.get("tool_calls") or []) if isinstance(c, dict)]
        turn = Turn(role, _content(m.get("content")), calls)
        # tau2's canned greeting (before any user turn, no usage) is not a model call of the agent
        greeting = role == "assistant" and not seen_user and m.get("usage") is None and m.get("raw_data") is None
        if role == "assistant" and not greeting:
            for memory_turn in _memory_turns(m.get("raw_data")):  # the step's memory calls came before its reply
                if memory_turn.role == "assistant":
                    memory_turn.step, step = step, step + 1
                turns.append(memory_turn)
            turn.step, step = step, step + 1
        seen_user |= role == "user"
        turns.append(turn)
    evaluation = dict(sim.get("reward_info") or {})
    if sim.get("termination_reason"):
        evaluation.setdefault("termination_reason", sim["termination_reason"])
    return Conversation("tau2", turns, evaluation, policy=policy)


def _memory_turns(raw: Any) -> list[Turn]:
    """The memory-tool calls a τ² reply's raw_data keeps (harness/benchmarks/tau2/agent.py), each as the model's
    call and the strategy's answer (docs/memory-tools.md)."""
    calls = raw.get("memory_calls") if isinstance(raw, dict) else None
    turns = []
    for c in calls if isinstance(calls, list) else []:
        if isinstance(c, dict):
            turns.append(Turn("assistant", "", [{"name": str(c.get("tool", "?")),
                                                 "arguments": _arguments(c.get("arguments"))}], memory=True))
            turns.append(Turn("tool", _content(c.get("answer")), memory=True))
    return turns


def _content(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, indent=1, ensure_ascii=False)


def _appworld(doc: dict) -> Conversation:
    turns = []
    if doc.get("supervisor"):
        turns.append(Turn("system", f"supervisor: {_content(doc['supervisor'])}"))
    turns.append(Turn("user", _content(doc.get("instruction"))))
    for i, s in enumerate(doc["steps"]):
        s = s if isinstance(s, dict) else {}
        code = s.get("code")
        memory = bool(s.get("memory"))  # a memory-tool call answered by the strategy, not run by the engine
        turns.append(Turn("assistant", _content(s.get("reply")),
                          [{"name": "python", "arguments": str(code)}] if code else [], step=i, memory=memory))
        if s.get("observation") is not None:
            turns.append(Turn("tool", _content(s.get("observation")), memory=memory))
    evaluation = dict(doc.get("evaluation") or {})
    for key in ("error", "error_detail"):
        if doc.get(key):
            evaluation[key] = doc[key]
    return Conversation("appworld", turns, evaluation)


def simulated_draws(conversation: Conversation | None) -> list[dict[str, str]]:
    """The simulated world's tags (`[simulated: p=… u=… relevant=… memory_tokens=… outcome=…]`), in order."""
    if conversation is None:
        return []
    return [dict(_PAIR.findall(m.group(1))) for t in conversation.turns if t.role == "assistant"
            for m in _SIM_TAG.finditer(t.text)]
