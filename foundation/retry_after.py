"""The provider's Retry-After, read off an error's response, and the one wait before a retry built on it: the agent's
client (harness/serving/model_client.py) and a strategy's roles (memory_kit/role_client.py) wait the doubling
backoff or the provider's Retry-After, whichever is longer, capped."""

from __future__ import annotations

import email.utils
import time

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
