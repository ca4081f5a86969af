"""SCRIPTED (fake) reflector for tests: a LiteLLM CustomLLM that answers extraction and merge prompts from tables.

Not a language model. Extraction replies are looked up by the task text in the prompt (a list of replies is
played one per call, so a test can script "invalid first, valid on retry"); merge decisions say "same" exactly
when the two texts belong to the same rule group of the table; a cluster consolidation (ALTK mode) merges the
inputs of one rule group into one guideline, reworded as `reworded[group]` when the table gives one.
"""

from __future__ import annotations

import json
import re
from typing import Any

from litellm import CustomLLM, ModelResponse

from harness.serving.providers import register_provider

PROVIDER = "memdeliv-fake"
MODEL = f"{PROVIDER}/reflector"


class ScriptedReflector(CustomLLM):
    def __init__(self) -> None:
        super().__init__()
        self.replies: dict[str, list[str]] = {}  # task text -> replies, one per call
        self.rule_of: dict[str, str] = {}  # guideline text -> rule group
        self.reworded: dict[str, str] = {}  # rule group -> the consolidated wording
        self.calls: list[str] = []  # "extract:<task>" / "merge:<new text>" / "consolidate:<n inputs>"

    def completion(self, model: str, messages: list[dict[str, Any]], *args: Any, **kwargs: Any) -> ModelResponse:
        user = messages[1]["content"]
        if user.startswith("Task: "):
            task = user.split("\n", 1)[0][len("Task: "):]
            self.calls.append(f"extract:{task}")
            queue = self.replies[task]
            text = queue.pop(0) if len(queue) > 1 else queue[0]
        elif "Guidelines (0-based index):" in user:
            listed = re.findall(r"^\[(\d+)\] (.*) \(trigger:", user, re.M)
            self.calls.append(f"consolidate:{len(listed)}")
            groups: dict[str, list[tuple[int, str]]] = {}
            for index, guideline in listed:
                groups.setdefault(self.rule_of.get(guideline, guideline), []).append((int(index), guideline))
            text = json.dumps({"guidelines": [
                {"text": self.reworded.get(rule, members[0][1]), "source_indices": [i for i, _ in members]}
                for rule, members in groups.items()]})
        else:
            new = re.search(r"New guideline: (.*) \(trigger", user).group(1)
            self.calls.append(f"merge:{new}")
            same = None
            for gid, text in re.findall(r"- id=(\S+): (.*) \(trigger", user):
                if self.rule_of.get(text) is not None and self.rule_of.get(text) == self.rule_of.get(new):
                    same = gid
            text = json.dumps({"same_as": same})
        return ModelResponse(model=model, choices=[{"message": {"role": "assistant", "content": text}}],
                             usage={"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2})


def install() -> ScriptedReflector:
    """Register a fresh scripted reflector under PROVIDER (replacing an earlier one) and return it."""
    return register_provider(PROVIDER, ScriptedReflector())
