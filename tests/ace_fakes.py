"""FAKE / SCRIPTED stand-ins for the ACE tests: no language model and no real embedder here.

- `ScriptedRoles`: a fake LiteLLM provider (`memdeliv-fake-ace/<anything>`) registered in
  `litellm.custom_provider_map`; it answers the Reflector and the Curator from queued JSON answers,
  so the whole `litellm.completion` path of the roles runs.
- `FakeBagOfWordsEmbedder`: word-count vectors, L2-normalised; identical word bags give similarity 1.
"""

from __future__ import annotations

import json
import os
import re
import zlib
from collections import deque
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no network fetch at import

import numpy as np
from litellm import CustomLLM, ModelResponse

from harness.serving.providers import register_provider

PROVIDER = "memdeliv-fake-ace"
MODEL = f"{PROVIDER}/roles"


class ScriptedRoles(CustomLLM):
    def __init__(self) -> None:
        super().__init__()
        self.answers: dict[str, deque] = {"reflector": deque(), "curator": deque()}
        self.calls: list[dict[str, Any]] = []

    def queue(self, role: str, answer: Any) -> None:
        self.answers[role].append(answer if isinstance(answer, str) else json.dumps(answer))

    def completion(self, model: str, messages: list[dict[str, Any]], *args: Any, **kwargs: Any) -> ModelResponse:
        role = "reflector" if "Reflector of an agent" in messages[0]["content"] else "curator"
        self.calls.append({"role": role, "model": model, "messages": messages,
                           "response_format": (kwargs.get("optional_params") or {}).get("response_format")})
        answer = self.answers[role].popleft() if self.answers[role] else json.dumps(
            {"error_analysis": "", "key_insight": "", "bullet_tags": []} if role == "reflector" else {"operations": []})
        return ModelResponse(model=model, choices=[{"message": {"role": "assistant", "content": answer},
                                                    "finish_reason": "stop"}],
                             usage={"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18})


def install_scripted_roles() -> ScriptedRoles:
    """Register a fresh scripted provider (replacing an earlier one) and return it."""
    return register_provider(PROVIDER, ScriptedRoles())


class FakeBagOfWordsEmbedder:
    name = "fake-bag-of-words"

    def __init__(self, dims: int = 256):
        self.dims = dims
        self.calls = 0

    def embed(self, texts):
        self.calls += 1
        out = np.zeros((len(texts), self.dims), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"[a-z0-9]+", text.lower()):
                out[row, zlib.crc32(word.encode()) % self.dims] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms == 0, 1, norms)
