"""`memdeliv-scripted-ace/roles`: SCRIPTED ACE Reflector and Curator (not a language model), through LiteLLM.

`make ace MODEL=oracle REFLECTOR=SCRIPTED` uses it, so offline adaptation runs end to end without a key and
writes a playbook. Its bullets are templates filled with the tool names seen in the episode: they are NOT
learned lessons, and the playbook's _meta says so.
- Reflector: tags every cited bullet helpful when the outcome it was shown is a success, harmful when a
  failure, neutral when no outcome was shown (no ground truth); its key insight names the tools used.
- Curator: one ADD under `others` carrying that key insight (an existing twin is rejected by the merge).
"""

from __future__ import annotations

import json
import re
from typing import Any

import litellm
from litellm import CustomLLM, ModelResponse

from harness.serving.providers import Provider, register_provider

PROVIDER = "memdeliv-scripted-ace"
MODEL = f"{PROVIDER}/roles"
CHOICE = "SCRIPTED"  # what a user types for --reflector-model / --curator-model (REFLECTOR= in make)
_TOOL = re.compile(r"-> tool (\w+)\(")
_CITED = re.compile(r"^\[([a-z]+-\d{5,})\] ", re.M)


class ScriptedAceRoles(CustomLLM):
    def completion(self, model: str, messages: list[dict[str, Any]], *args: Any, **kwargs: Any) -> ModelResponse:
        system, user = messages[0]["content"], messages[-1]["content"]
        text = json.dumps(_reflection(user) if "Reflector of an agent" in system else _curation(user))
        n_in = litellm.token_counter(model="gpt-4o", messages=messages)
        n_out = litellm.token_counter(model="gpt-4o", text=text)
        return ModelResponse(model=MODEL, choices=[{"message": {"role": "assistant", "content": text},
                                                    "finish_reason": "stop"}],
                             usage={"prompt_tokens": n_in, "completion_tokens": n_out, "total_tokens": n_in + n_out})


def _reflection(prompt: str) -> dict[str, Any]:
    tools = sorted(set(_TOOL.findall(prompt)))
    tag = "helpful" if "success=True" in prompt else "harmful" if "success=False" in prompt else "neutral"
    cited = _CITED.findall(prompt.split("Bullets the agent cited:", 1)[-1])
    used = ", ".join(tools) or "no tools"
    return {"reasoning": "scripted template", "error_analysis": f"scripted: the agent used {used}",
            "key_insight": f"(scripted template) On tasks like this the agent called {used}; "
                           "check each result before the next step.",
            "bullet_tags": [{"id": i, "tag": tag} for i in cited]}


def _curation(prompt: str) -> dict[str, Any]:
    reflection = json.loads(prompt.split("Reflection:\n", 1)[1])
    return {"reasoning": "scripted template",
            "operations": [{"type": "ADD", "section": "others", "content": reflection["key_insight"]}]}


def install() -> ScriptedAceRoles:
    """Register the scripted roles under PROVIDER (idempotent) and return the handler."""
    return register_provider(PROVIDER, ScriptedAceRoles(), replace=False)


SERVED = Provider(PROVIDER, install)  # its entry point (pyproject.toml, memdeliv.providers)
