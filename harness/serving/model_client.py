"""The only way the harness talks to a model: LiteLLM `completion`, with retries and exact usage.

Every number in the token ledger comes from here, read off the provider's own usage block:
prompt, completion, cached prompt tokens (None when the provider does not report them), and cost
(None when LiteLLM has no price for the model — never a made-up 0).
"""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no network fetch of the price map

import contextvars
import logging
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterator

import litellm

from foundation.retry_after import MAX_RETRY_WAIT_S, Retried
from harness.serving import provider_errors
from harness.serving.faults import (MAX_RETRIES, RETRY_BACKOFF_S, ContextOverflow, InfraError, ProviderFault,
                                    ProviderUnusable, RequestRejected)

litellm.suppress_debug_info = True
for _name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy", "httpx"):
    logging.getLogger(_name).setLevel(logging.WARNING)

@dataclass
class ProviderStats:
    """Per-episode retry accounting, kept by the episode's ledger (its row's columns; the manifest sums them)."""

    retried: int = 0  # failed attempts that were retried
    recovered: int = 0  # calls that succeeded after at least one retry
    gave_up: int = 0  # calls that failed max_retries + 1 times (the episode becomes infra)
    waited_s: float = 0.0  # time slept between attempts (backoff or the provider's Retry-After)
    unreachable: str | None = None  # the endpoint of a call that gave up never having connected (not a column)

    def fields(self) -> dict[str, Any]:
        return {"provider_retries": self.retried, "provider_recovered": self.recovered,
                "provider_gave_up": self.gave_up}


_stats: contextvars.ContextVar[ProviderStats | None] = contextvars.ContextVar("memdeliv_provider_stats", default=None)


@contextmanager
def provider_stats(stats: ProviderStats | None = None) -> Iterator[ProviderStats]:
    """Count retries of every ModelClient call made in this context into `stats` (the episode's ledger's,
    harness/ledger.py, which enters this)."""
    stats = stats if stats is not None else ProviderStats()
    token = _stats.set(stats)
    try:
        yield stats
    finally:
        _stats.reset(token)


@dataclass(frozen=True)
class ToolCallText:
    id: str
    name: str
    arguments: str  # raw JSON text as the model wrote it; the agent decides whether it parses


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int | None
    cost_usd: float | None
    latency_s: float
    cache_write_tokens: int | None = None  # prompt tokens written to the provider's cache (Anthropic bills them)


@dataclass(frozen=True)
class Completion:
    content: str | None
    tool_calls: tuple[ToolCallText, ...]
    usage: Usage
    finish_reason: str | None = None


@dataclass
class ModelClient:
    model: str
    kwargs: dict[str, Any] = field(default_factory=dict)
    max_retries: int = MAX_RETRIES
    retry_backoff_s: float = RETRY_BACKOFF_S
    max_retry_wait_s: float = MAX_RETRY_WAIT_S  # a longer Retry-After is capped (the retry still counts)
    metadata: dict[str, Any] | None = None  # only scripted models receive task context

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> Completion:
        extra: dict[str, Any] = {}
        if tools:
            extra["tools"] = tools
            extra["tool_choice"] = "auto"
        if self.metadata is not None:
            extra["metadata"] = self.metadata
        stats = _stats.get() or ProviderStats()
        endpoints: list[str | None] = []  # per failed attempt: the endpoint it never reached (None: it connected)
        started = time.perf_counter()

        def attempt() -> Any:
            nonlocal started
            started = time.perf_counter()
            # max_retries=0: the SDK under LiteLLM would retry on its own, unseen and uncounted; we retry here
            response = litellm.completion(model=self.model, messages=messages,
                                          **{"max_retries": 0, **self.kwargs}, **extra)
            if not getattr(response, "choices", None):
                raise ProviderFault(f"{self.model}: the provider returned an empty choice list")
            return response

        def waited(exc: BaseException, seconds: float) -> None:
            endpoints.append(provider_errors.unreachable_endpoint(exc, self.kwargs.get("api_base")))
            stats.retried += 1
            stats.waited_s += seconds

        retried = Retried(lambda exc: _kind(exc) == provider_errors.RETRY, self.max_retries, self.retry_backoff_s,
                          self.max_retry_wait_s, on_wait=waited)
        try:
            response = retried(attempt)
        except Exception as exc:
            failure = self._failure(exc, retried.attempts, endpoints, stats)
            if failure is exc:
                raise
            raise failure from exc
        stats.recovered += retried.attempts > 1
        return _to_completion(response, self.model, time.perf_counter() - started)

    def _failure(self, exc: Exception, attempts: int, endpoints: list[str | None],
                 stats: ProviderStats) -> BaseException:
        """The error a call ends in, by kind: as is when it is not a provider error (a scripted model's own bug,
        labelled by the caller), else the harness's own exception for it."""
        kind = _kind(exc)
        if kind is None:
            return exc
        if kind == provider_errors.OVERFLOW:
            return ContextOverflow(f"{self.model}: context window exceeded: {_short(exc)}")
        if kind == provider_errors.REJECTED:
            return RequestRejected(f"{self.model}: request rejected: {type(exc).__name__}: {_short(exc)}")
        if kind == provider_errors.STOP:
            return ProviderUnusable(f"{self.model}: {provider_errors.stop_reason(exc)}: "
                                    f"{type(exc).__name__}: {_short(exc, 200)}")
        if kind == provider_errors.INFRA:
            return InfraError(f"{self.model}: {type(exc).__name__}: {_short(exc)}")
        stats.gave_up += 1  # retried until the attempts ran out
        endpoint = provider_errors.unreachable_endpoint(exc, self.kwargs.get("api_base"))
        where = ""
        if endpoint is not None and all(e is not None for e in endpoints):  # not one attempt reached the provider
            stats.unreachable = endpoint
            where = f"cannot reach {endpoint}: "
        return InfraError(f"{self.model}: {where}{type(exc).__name__} after {attempts} attempts: {_short(exc)}")


def _kind(exc: BaseException) -> str | None:
    return provider_errors.RETRY if isinstance(exc, ProviderFault) else provider_errors.kind_of(exc)


def _to_completion(response: Any, model: str, latency: float) -> Completion:
    choice = response.choices[0]
    message = choice.message
    calls = tuple(
        ToolCallText(id=tc.id or f"call_{i}", name=tc.function.name or "", arguments=tc.function.arguments or "")
        for i, tc in enumerate(message.tool_calls or [])
    )
    return Completion(
        content=message.content,
        tool_calls=calls,
        usage=read_usage(response, model, latency),
        finish_reason=getattr(choice, "finish_reason", None),
    )


def read_usage(response: Any, model: str, latency: float) -> Usage:
    usage = getattr(response, "usage", None)
    if usage is None:
        raise InfraError(f"{model}: provider returned no usage block; token accounting would be a guess")
    return Usage(
        prompt_tokens=int(usage.prompt_tokens or 0),
        completion_tokens=int(usage.completion_tokens or 0),
        cached_tokens=cached_tokens(usage),
        cost_usd=priced_cost(response, model),
        latency_s=latency,
        cache_write_tokens=cache_write_tokens(usage),
    )


def cached_tokens(usage: Any) -> int | None:
    """Cached prompt tokens as the provider reports them; None when it says nothing."""
    details = getattr(usage, "prompt_tokens_details", None)
    value = getattr(details, "cached_tokens", None) if details is not None else None
    if value is None:  # Anthropic-style field, surfaced by LiteLLM on the usage object
        value = getattr(usage, "cache_read_input_tokens", None)
    return None if value is None else int(value)


def cache_write_tokens(usage: Any) -> int | None:
    """Prompt tokens written to the cache (Anthropic's `cache_creation_input_tokens`); None when not reported."""
    value = getattr(usage, "cache_creation_input_tokens", None)
    if value is None:
        details = getattr(usage, "prompt_tokens_details", None)
        value = getattr(details, "cache_creation_tokens", None) if details is not None else None
    return None if value is None else int(value)


def priced_cost(response: Any, model: str) -> float | None:
    try:
        cost = litellm.completion_cost(completion_response=response, model=model)
    except Exception:  # LiteLLM raises for models it has no price for
        return None
    return None if cost is None else float(cost)


def supports_native_tools(model: str) -> bool:
    try:
        return bool(litellm.supports_function_calling(model))
    except Exception:
        return False


def count_tokens(model: str, text: str) -> int:
    """LiteLLM's tokenizer for the model (cl100k approximation for models it does not know)."""
    if not text:
        return 0
    return int(litellm.token_counter(model=model, text=text))


def _short(exc: BaseException, limit: int = 300) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= limit else text[:limit] + "..."
