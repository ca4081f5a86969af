"""One JSON-answering model call, parsed strictly: the ACE roles' (Reflector, Curator, the LLM ranker). The call
itself is the kit's client (memory_kit/role_client.py: the run's model and key, the harness's retries and backoff,
each answered call reported with its tokens and price, so the episode it belongs to counts it like an agent call).

`completion` defaults to `litellm.completion`; tests inject a scripted callable (or register a fake
CustomLLM in `litellm.custom_provider_map`) with the same signature.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import jsonschema

from memory_kit.prices import usage_counts
from memory_kit.role_client import RoleCallFailed, RoleClient, RoleProviderUnusable, content, short

JSON_MODES = ("schema", "object", "none")
_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.S)


class RoleError(RuntimeError):
    """The role's model failed after its retries or answered something that is not the JSON asked for."""


@dataclass
class JsonLLM(RoleClient):
    json_mode: str = "schema"  # schema: response_format json_schema; object: json_object; none: prompt only

    def __post_init__(self) -> None:
        if self.json_mode not in JSON_MODES:
            raise ValueError(f"json_mode={self.json_mode!r}; valid: {', '.join(JSON_MODES)}")

    def ask(self, system: str, user: str, schema: dict[str, Any], name: str,
            check: dict[str, Any] | None = None) -> tuple[dict[str, Any], dict[str, int]]:
        """-> (parsed answer, usage). `schema` goes to the model; the answer is validated against `check`
        (default: the same schema). Raises RoleError on a failed call or an answer off the schema (the playbook
        is untouched); RoleProviderUnusable when every call would fail alike (the job stops)."""
        extra: dict[str, Any] = {}
        if self.json_mode == "schema":
            extra["response_format"] = {"type": "json_schema",
                                        "json_schema": {"name": name, "schema": schema, "strict": False}}
        elif self.json_mode == "object":
            extra["response_format"] = {"type": "json_object"}
        messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        try:
            response, retries = self.call(name, messages, **extra)
        except RoleProviderUnusable:
            raise
        except RoleCallFailed as exc:
            raise RoleError(str(exc)) from None
        usage = usage_counts(response)
        answer = parse_json(content(response), name)
        try:
            jsonschema.validate(answer, check or schema)
        except jsonschema.ValidationError as exc:
            raise RoleError(f"{name}: answer does not match its schema: {exc.message}") from None
        return answer, {**usage, **({"retries": retries} if retries else {})}


def parse_json(text: str | None, name: str) -> dict[str, Any]:
    """The whole answer must be one JSON object (a ```json fence around it is tolerated)."""
    raw = (text or "").strip()
    fenced = _FENCE.match(raw)
    if fenced:
        raw = fenced.group(1)
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise RoleError(f"{name}: answer is not JSON ({exc.msg}): {short(raw)}") from None
    if not isinstance(value, dict):
        raise RoleError(f"{name}: answer must be a JSON object, got {type(value).__name__}")
    return value
