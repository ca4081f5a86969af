"""The provider's Retry-After, read off an error's response: the agent's client (harness/serving/model_client.py)
and a strategy's roles (strategies/role_client.py) wait at least that long before their next attempt."""

from __future__ import annotations

import email.utils
import time


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
