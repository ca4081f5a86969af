"""Ask a text LLM for JSON, check it against a schema, retry once, never raise.

Offline builders (guideline extraction, merge decisions) talk to a model through a plain callable
`TextLLM = (messages) -> str`, so the harness can hand in its retrying, ledgered client and tests can
hand in a scripted one. `litellm_llm(model)` is the plain LiteLLM version.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from typing import Any, Callable, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from memory_kit.role_client import RoleClient, content

log = logging.getLogger("memdeliv.llm_json")

TextLLM = Callable[[list[dict[str, str]]], str]
T = TypeVar("T", bound=BaseModel)
_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.S)


def litellm_llm(model: str, role: str = "text_llm", **kwargs: Any) -> TextLLM:
    """A TextLLM calling `model` through the strategies' client (memory_kit/role_client.py: retried, reported by
    role so an episode that makes it counts it) and returning the reply text."""
    client = RoleClient(model, dict(kwargs))

    def call(messages: list[dict[str, str]]) -> str:
        response, _ = client.call(role, messages)
        return content(response) or ""

    return call


@dataclass(frozen=True)
class JsonAnswer(Generic[T]):
    value: T | None  # None: no valid answer after the retry
    raw: str
    error: str | None = None


def extract_json(text: str) -> Any:
    """The JSON object in a reply: the whole text, a ```json fence, or the outermost {...}."""
    text = text.strip()
    candidates = [text] + _FENCE.findall(text)
    if "{" in text and "}" in text:
        candidates.append(text[text.index("{"): text.rindex("}") + 1])
    last: Exception | None = None
    for candidate in candidates:
        try:
            return json.loads(candidate)
        except json.JSONDecodeError as exc:
            last = exc
    raise ValueError(f"no JSON object found ({last})")


def ask_json(llm: TextLLM, messages: list[dict[str, str]], schema: type[T],
             check: Callable[[T], str | None] = lambda _: None, what: str = "answer") -> JsonAnswer[T]:
    """Call the LLM; on unparseable or invalid output tell it why and retry once; then give up and log."""
    raw = ""
    error: str | None = None
    for attempt in range(2):
        try:
            raw = llm(messages)
        except Exception as exc:  # provider trouble is logged and skipped like bad output, never fatal
            error = f"LLM call failed: {type(exc).__name__}: {str(exc)[:300]}"
            log.warning("%s: %s", what, error)
            return JsonAnswer(None, raw, error)
        try:
            value = schema.model_validate(extract_json(raw))
            error = check(value)
            if error is None:
                return JsonAnswer(value, raw)
        except (ValueError, ValidationError) as exc:
            error = " ".join(str(exc).split())[:500]
        if attempt == 0:
            messages = messages + [
                {"role": "assistant", "content": raw},
                {"role": "user",
                 "content": f"That answer was invalid: {error}\nReply again with the JSON object only."},
            ]
    log.warning("%s: invalid JSON after one retry, skipped: %s", what, error)
    return JsonAnswer(None, raw, error)
