"""The provider's Retry-After, read off an error's response, the one wait before a retry built on it, and the one
retry loop (`Retried`): the agent's client (harness/serving/model_client.py) and a strategy's roles
(memory_kit/role_client.py) retry alike, waiting the doubling backoff or the provider's Retry-After, whichever is
longer, capped."""

from __future__ import annotations

import email.utils
import time
from typing import Any, Callable, Optional, TypeVar

from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt

T = TypeVar("T")

MAX_RETRY_WAIT_S = 120.0  # a longer Retry-After is capped (the retry still counts)


def retry_wait_s(exc: BaseException | None, backoff_s: float, attempt: int, cap: float = MAX_RETRY_WAIT_S) -> float:
    """Seconds before retry number `attempt` + 1 (0-based): backoff_s doubled per attempt, at least the provider's
    Retry-After, at most `cap`."""
    after = retry_after_s(exc) if exc is not None else None
    return min(cap, max(backoff_s * (2 ** attempt), after or 0.0))


def retry_after_s(exc: BaseException) -> float | None:
    """Retry-After in seconds (seconds or an HTTP date; retry-after-ms too), or None when the provider said none."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if not headers:
        return None
    try:
        ms = headers.get("retry-after-ms")
        if ms is not None:
            return max(0.0, float(ms) / 1000)
        value = headers.get("retry-after")
        if value is None:
            return None
        try:
            return max(0.0, float(value))
        except ValueError:
            when = email.utils.parsedate_to_datetime(value)
            return max(0.0, when.timestamp() - time.time())
    except (TypeError, ValueError, AttributeError):
        return None


class Retried:
    """The one retry loop of every model call (the agent's client and every strategy role's): tenacity, with
    `retry_wait_s` between attempts. `retryable(exc)` says which errors are tried again; `on_wait(exc, seconds)`
    is told of each retry before its wait (a ledger's counts). A call that still fails raises its last error
    as is; `attempts` then says how many were made. One instance per call."""

    def __init__(self, retryable: Callable[[BaseException], bool], max_retries: int, backoff_s: float,
                 cap: float = MAX_RETRY_WAIT_S, on_wait: Optional[Callable[[BaseException, float], None]] = None):
        self.attempts = 0
        self._on_wait = on_wait
        self._backoff_s, self._cap = backoff_s, cap
        self._retrying = Retrying(stop=stop_after_attempt(max_retries + 1), wait=self._wait, reraise=True,
                                  retry=retry_if_exception(retryable), before_sleep=self._before_sleep)

    def __call__(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        try:
            return self._retrying(fn, *args, **kwargs)
        finally:
            self.attempts = int(self._retrying.statistics.get("attempt_number", 1))

    def _wait(self, state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome is not None else None
        return retry_wait_s(exc, self._backoff_s, state.attempt_number - 1, self._cap)

    def _before_sleep(self, state: RetryCallState) -> None:  # only before a retry (the wait is also computed
        exc = state.outcome.exception() if state.outcome is not None else None  # for the last, failed attempt)
        if self._on_wait is not None and exc is not None:
            self._on_wait(exc, float(state.upcoming_sleep))
