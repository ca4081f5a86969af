"""One JSON-answering LiteLLM call, parsed strictly. Strategies never import the harness, so this is
the ACE roles' own tiny client. Every answered call is reported (strategies.base.report_call) with its tokens and
price, so the episode it belongs to counts it like an agent call (harness/ledger.py).

`completion` defaults to `litellm.completion`; tests inject a scripted callable (or register a fake
CustomLLM in `litellm.custom_provider_map`) with the same signature.
"""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import jsonschema

from strategies.prices import report_usage, usage_counts

JSON_MODES = ("schema", "object", "none")
_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.S)


class RoleError(RuntimeError):
    """The role's model failed or answered something that is not the JSON asked for."""


# Transient provider trouble, retried with backoff as the harness retries agent calls
# (harness/serving/model_client.py: same classes, attempts and doubling wait); names, so litellm loads lazily.
TRANSIENT = ("RateLimitError", "InternalServerError", "ServiceUnavailableError", "BadGatewayError",
             "APIConnectionError", "Timeout")


def _transient(exc: BaseException) -> bool:
    import litellm

    return isinstance(exc, tuple(getattr(litellm.exceptions, name) for name in TRANSIENT))


@dataclass
class JsonLLM:
    model: str
    kwargs: dict[str, Any] = field(default_factory=dict)
    json_mode: str = "schema"  # schema: response_format json_schema; object: json_object; none: prompt only
    api_key_env: str | None = None  # read at call time, never stored
    completion: Callable[..., Any] | None = None
    max_retries: int = 3  # as agent calls: a transient failure is tried again up to 3 times
    retry_backoff_s: float = 2.0  # then 4 s, 8 s: doubling, as harness/serving/model_client.py

    def __post_init__(self) -> None:
        if self.json_mode not in JSON_MODES:
            raise ValueError(f"json_mode={self.json_mode!r}; valid: {', '.join(JSON_MODES)}")

    def ask(self, system: str, user: str, schema: dict[str, Any], name: str,
            check: dict[str, Any] | None = None) -> tuple[dict[str, Any], dict[str, int]]:
        """-> (parsed answer, usage). `schema` goes to the model; the answer is validated against `check`
        (default: the same schema). Raises RoleError on a failed call or an answer off the schema."""
        kwargs = dict(self.kwargs)
        if self.json_mode == "schema":
            kwargs["response_format"] = {"type": "json_schema",
                                         "json_schema": {"name": name, "schema": schema, "strict": False}}
        elif self.json_mode == "object":
            kwargs["response_format"] = {"type": "json_object"}
        if self.api_key_env:
            if not os.environ.get(self.api_key_env):
                raise RoleError(f"{name}: environment variable {self.api_key_env} is not set")
            kwargs["api_key"] = os.environ[self.api_key_env]
        call = self.completion
        if call is None:
            import litellm

            call = litellm.completion
        messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        response, retries = self._call(call, name, messages, kwargs)
        usage = usage_counts(response)
        report_usage(name, self.model, usage)  # spent even when the answer turns out unusable
        text = _content(response)
        answer = parse_json(text, name)
        try:
            jsonschema.validate(answer, check or schema)
        except jsonschema.ValidationError as exc:
            raise RoleError(f"{name}: answer does not match its schema: {exc.message}") from None
        return answer, {**usage, **({"retries": retries} if retries else {})}

    def _call(self, call: Callable[..., Any], name: str, messages: list[dict[str, Any]],
              kwargs: dict[str, Any]) -> tuple[Any, int]:
        """-> (response, retries used). A provider error becomes one clear RoleError; the playbook is untouched."""
        attempt = 0
        while True:
            try:
                # max_retries=0: the SDK under LiteLLM would retry unseen; we retry (and count) here
                return call(model=self.model, messages=messages, **{"max_retries": 0, **kwargs}), attempt
            except Exception as exc:
                if attempt < self.max_retries and _transient(exc):
                    time.sleep(self.retry_backoff_s * (2 ** attempt))
                    attempt += 1
                    continue
                tries = f" after {attempt + 1} attempts" if attempt else ""
                raise RoleError(f"{name}: call to {self.model} failed{tries}: {type(exc).__name__}: "
                                f"{_short(exc)}") from None


def parse_json(text: str | None, name: str) -> dict[str, Any]:
    """The whole answer must be one JSON object (a ```json fence around it is tolerated)."""
    raw = (text or "").strip()
    fenced = _FENCE.match(raw)
    if fenced:
        raw = fenced.group(1)
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise RoleError(f"{name}: answer is not JSON ({exc.msg}): {_short(raw)}") from None
    if not isinstance(value, dict):
        raise RoleError(f"{name}: answer must be a JSON object, got {type(value).__name__}")
    return value


def _content(response: Any) -> str | None:
    try:
        return response.choices[0].message.content
    except (AttributeError, IndexError, KeyError, TypeError):
        try:
            return response["choices"][0]["message"]["content"]
        except (IndexError, KeyError, TypeError):
            raise RoleError("response has no message content") from None


def _short(value: Any, limit: int = 300) -> str:
    text = " ".join(str(value).split())
    return text if len(text) <= limit else text[:limit] + "..."
