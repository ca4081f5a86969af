"""The one model client of a strategy's own roles (ACE's Reflector and Curator, a ranker, the zoo's judges,
extractors, curators and inducers): the run's model with its served kwargs and `model.api_key_env`, the provider
retried by the harness's one retry loop (foundation.retry_after.Retried: attempts, doubling wait, the provider's
Retry-After), each answered call reported by role with its tokens and price (memory_kit.prices.report_usage -> the
episode's ledger).

The harness builds it from the run's model settings and hands it to a strategy in `StrategyContext.client`; its
`classify` is the harness's own reading of a provider error (harness/serving/provider_errors.kind_of), so a role's
call is retried, lost or stops the job exactly as an agent call would. A call that still fails raises
`RoleCallFailed` (the update is lost, the episode stands: docs/failure-accounting.md); a provider that is unusable
(bad key, unknown model) raises `RoleProviderUnusable` (the job stops).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields, replace
from typing import Any, Callable, Mapping, Optional, Self

from foundation.retry_after import Retried
from foundation.plugins import PluginRegistry
from memory_kit.prices import report_usage, usage_counts

RETRY, STOP = "retry", "stop"  # the kinds of provider error the client acts on (harness/serving/provider_errors.py)
SCRIPTED_DESIGNS = "memdeliv-scripted-designs/roles"  # its entry point: pyproject.toml, memdeliv.providers
_PROVIDERS = PluginRegistry("memdeliv.providers", "provider", KeyError)
_TRANSIENT = ("RateLimitError", "InternalServerError", "ServiceUnavailableError", "BadGatewayError",
              "APIConnectionError", "Timeout")
_UNUSABLE = ("AuthenticationError", "NotFoundError", "UnsupportedParamsError")


class RoleCallFailed(RuntimeError):
    """A role's call that failed after its retries (or at once, for an error that is not retried)."""

    def __init__(self, role: str, model: str, cause: BaseException, attempts: int = 1):
        tries = f" after {attempts} attempts" if attempts > 1 else ""
        super().__init__(f"{role}: call to {model} failed{tries}: {type(cause).__name__}: {short(cause)}")
        self.role, self.model, self.cause, self.attempts = role, model, cause, attempts


class RoleProviderUnusable(RoleCallFailed):
    """Every call would fail alike (a bad or missing key, an unknown model): the job stops, as for the agent."""


def litellm_kind(exc: BaseException) -> Optional[str]:
    """The default reading of a provider error outside a run (an offline build, a unit test): LiteLLM's classes."""
    import litellm

    if isinstance(exc, tuple(getattr(litellm.exceptions, n) for n in _UNUSABLE)):
        return STOP
    if isinstance(exc, tuple(getattr(litellm.exceptions, n) for n in _TRANSIENT)):
        return RETRY
    return None


def served_in_process(model: str) -> bool:
    return "/" in model and model.split("/", 1)[0] in _PROVIDERS.available()


@dataclass
class RoleClient:
    model: str
    kwargs: dict[str, Any] = field(default_factory=dict)  # temperature, max_tokens, api_base, ...
    completion: Optional[Callable[..., Any]] = None  # tests inject one; default litellm.completion
    api_key_env: Optional[str] = field(default=None, kw_only=True)  # read at call time, never stored
    max_retries: int = field(default=3, kw_only=True)  # as agent calls (model.max_retries)
    retry_backoff_s: float = field(default=2.0, kw_only=True)  # then doubling (model.retry_backoff_s)
    classify: Callable[[BaseException], Optional[str]] = field(default=litellm_kind, kw_only=True, repr=False)

    def with_kwargs(self, **kwargs: Any) -> Self:
        """The same client (and usage tally) with these call kwargs added, e.g. a role's temperature."""
        return replace(self, kwargs={**self.kwargs, **kwargs})

    def for_role(self, chosen: Optional[str]) -> Self:
        """The client of a design's own calls: `chosen` (a strategy option) when set, with no run kwargs or key;
        else the run's model, except a scripted or simulated run model (not a language model), whose calls the
        SCRIPTED designs model answers (harness/scripted/memory_designs.py)."""
        if chosen:
            return replace(self, model=chosen, kwargs={}, api_key_env=None)
        if not self.model or served_in_process(self.model):
            return replace(self, model=SCRIPTED_DESIGNS, kwargs={}, api_key_env=None)
        return self

    def configured(self, model: Optional[str], kwargs: Optional[Mapping[str, Any]] = None,
                   api_key_env: Optional[str] = None, **retries: Any) -> Self:
        """A role with its own options (ACE's `<role>_model`, `_kwargs`, `_api_key_env`): None for each is the
        run's (its kwargs and key only for the run's own model); `retries`: max_retries / retry_backoff_s."""
        same = not model or model == self.model
        return replace(self, model=model or self.model,
                       kwargs=dict(kwargs) if kwargs is not None else (dict(self.kwargs) if same else {}),
                       api_key_env=api_key_env or (self.api_key_env if same else None),
                       **{k: v for k, v in retries.items() if v is not None})

    @classmethod
    def of(cls, client: "RoleClient", **extra: Any) -> Self:
        """A kind of client (RoleLLM, JsonLLM) with `client`'s model, kwargs, key and retries."""
        return cls(**{f.name: getattr(client, f.name) for f in fields(RoleClient)}, **extra)

    def call(self, role: str, messages: list[dict[str, Any]], **extra: Any) -> tuple[Any, int]:
        """-> (the provider's response, retries used); the answered call is reported under `role`."""
        kwargs: dict[str, Any] = {"max_retries": 0, **self.kwargs, **extra}  # the SDK under LiteLLM retries unseen
        if self.api_key_env:
            if not os.environ.get(self.api_key_env):
                raise RoleProviderUnusable(role, self.model, KeyError(f"{self.api_key_env} is not set"))
            kwargs["api_key"] = os.environ[self.api_key_env]
        call = self.completion
        if call is None:
            import litellm

            if served_in_process(self.model):
                _PROVIDERS.load(self.model.split("/", 1)[0]).install()
            call = litellm.completion
        retried = Retried(lambda exc: self.classify(exc) == RETRY, self.max_retries, self.retry_backoff_s)
        try:
            response = retried(call, model=self.model, messages=messages, **kwargs)
        except Exception as exc:
            failed = RoleProviderUnusable if self.classify(exc) == STOP else RoleCallFailed
            raise failed(role, self.model, exc, retried.attempts) from None
        report_usage(role, self.model, usage_counts(response))  # spent even when the answer proves unusable
        return response, retried.attempts - 1


def content(response: Any) -> Optional[str]:
    """The reply text of a response object or dict (None when it has none)."""
    try:
        return response.choices[0].message.content
    except (AttributeError, IndexError, KeyError, TypeError):
        try:
            return response["choices"][0]["message"]["content"]
        except (IndexError, KeyError, TypeError):
            return None


def short(value: Any, limit: int = 300) -> str:
    text = " ".join(str(value).split())
    return text if len(text) <= limit else text[:limit] + "..."


def context_client(model: Optional[str], kwargs: Mapping[str, Any]) -> RoleClient:
    """A run's client from a model and kwargs alone (a StrategyContext built without the harness)."""
    return RoleClient(model or "", dict(kwargs))
