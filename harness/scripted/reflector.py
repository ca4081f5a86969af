"""`memdeliv-scripted-reflector/templates`: a SCRIPTED reflector (not a language model) served through LiteLLM.

`make memory MODEL=oracle` uses it, so the whole build (collect -> extract -> consolidate -> artifact) runs
offline. Its guidelines are templates filled with the tool names seen in the episode, so they repeat across
tasks and consolidation has real merges to count; they are NOT learned lessons, and the artifact's _meta says so.
Merge decisions: "same" only for a candidate with exactly the same text; cluster consolidation (ALTK mode)
merges exactly the inputs with the same text and keeps their wording; the lossy prompt ("aim for about N")
gets those groups dealt round-robin into at most N outputs, each keeping its first member's wording.
"""

from __future__ import annotations

import json
import re
from typing import Any

import litellm
from litellm import CustomLLM, ModelResponse

from harness.serving.providers import Provider, register_provider

PROVIDER = "memdeliv-scripted-reflector"
MODEL = f"{PROVIDER}/templates"
_TOOL_CALL = re.compile(r"^\[assistant -> tool\] (\w+)\(", re.M)


class ScriptedReflector(CustomLLM):
    def completion(self, model: str, messages: list[dict[str, Any]], *args: Any, **kwargs: Any) -> ModelResponse:
        prompt = messages[-1]["content"]
        if "New guideline:" in prompt:
            text = _merge_answer(prompt)
        elif "Guidelines (0-based index):" in prompt:
            text = _consolidation_answer(prompt, messages[0]["content"])
        else:
            text = _guidelines(prompt)
        n_in = litellm.token_counter(model="gpt-4o", messages=[{"role": "user", "content": prompt}])
        n_out = litellm.token_counter(model="gpt-4o", text=text)
        return ModelResponse(model=MODEL, choices=[{"message": {"role": "assistant", "content": text}}],
                             usage={"prompt_tokens": n_in, "completion_tokens": n_out, "total_tokens": n_in + n_out})


def _guidelines(prompt: str) -> str:
    tools = _TOOL_CALL.findall(prompt)
    failed = "Outcome: FAILED" in prompt
    rows = []
    if tools:
        rows.append({"text": f"Call {tools[0]} before any other tool to establish who the user is.",
                     "category": "strategy", "trigger": "start of a task",
                     "rationale": f"the episode opened with {tools[0]}"})
    if len(tools) > 1:
        rows.append({"text": f"Call {tools[-1]} only after the lookups it depends on have returned.",
                     "category": "optimization", "trigger": f"about to call {tools[-1]}",
                     "rationale": f"the episode ended with {tools[-1]}"})
    if failed:
        rows = rows[:2] + [{"text": "When a tool returns an error, re-read the relevant record before retrying.",
                            "category": "recovery", "trigger": "a tool call returned an error",
                            "rationale": "the episode failed"}]
    return json.dumps({"guidelines": rows})


def _merge_answer(prompt: str) -> str:
    new = re.search(r"New guideline: (.*) \(trigger", prompt)
    same = None
    for gid, text in re.findall(r"^- id=(\S+): (.*) \(trigger", prompt, re.M):
        if new and text == new.group(1):
            same = gid
    return json.dumps({"same_as": same})


def _consolidation_answer(prompt: str, system: str) -> str:
    groups: dict[str, list[int]] = {}
    for index, text in re.findall(r"^\[(\d+)\] (.*) \(trigger:", prompt, re.M):
        groups.setdefault(text, []).append(int(index))
    rows = [(text, idxs) for text, idxs in groups.items()]
    aim = re.search(r"aim for about (\d+)", system)
    if aim and rows:  # lossy: deal the groups into at most N outputs
        n = min(int(aim.group(1)), len(rows))
        rows = [(rows[k][0], [i for _, idxs in rows[k::n] for i in idxs]) for k in range(n)]
    return json.dumps({"guidelines": [{"text": text, "source_indices": idxs} for text, idxs in rows]})


def install() -> None:
    """Register the provider with LiteLLM (idempotent)."""
    register_provider(PROVIDER, ScriptedReflector(), replace=False)


SERVED = Provider(PROVIDER, install)  # its entry point (pyproject.toml, memdeliv.providers)
