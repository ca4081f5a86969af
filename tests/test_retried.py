"""foundation.retry_after.Retried, the one retry loop of the agent's client and every strategy role's: retries only
what is retryable, tells its listener of each retry (never of the last, failed attempt), and counts attempts."""

from __future__ import annotations

import pytest

from foundation.retry_after import Retried


class Flaky:
    def __init__(self, failures: list[BaseException]):
        self.failures, self.calls = list(failures), 0

    def __call__(self) -> str:
        self.calls += 1
        if self.failures:
            raise self.failures.pop(0)
        return "answer"


def test_retryable_errors_are_retried_and_each_wait_is_told_once():
    waits: list[tuple[str, float]] = []
    retried = Retried(lambda e: isinstance(e, TimeoutError), 3, 0.0, on_wait=lambda e, s: waits.append((str(e), s)))
    flaky = Flaky([TimeoutError("a"), TimeoutError("b")])
    assert retried(flaky) == "answer" and retried.attempts == 3 and flaky.calls == 3
    assert [w[0] for w in waits] == ["a", "b"]


def test_the_last_error_is_raised_as_is_after_the_attempts_run_out():
    waits: list[float] = []
    retried = Retried(lambda e: isinstance(e, TimeoutError), 2, 0.0, on_wait=lambda e, s: waits.append(s))
    with pytest.raises(TimeoutError, match="c"):
        retried(Flaky([TimeoutError("a"), TimeoutError("b"), TimeoutError("c"), TimeoutError("d")]))
    assert retried.attempts == 3 and len(waits) == 2  # the third, failed attempt is not a retry


def test_an_error_that_is_not_retryable_is_raised_at_once():
    retried = Retried(lambda e: isinstance(e, TimeoutError), 5, 0.0)
    flaky = Flaky([PermissionError("key")])
    with pytest.raises(PermissionError):
        retried(flaky)
    assert retried.attempts == 1 and flaky.calls == 1


def test_the_wait_doubles_and_is_capped():
    waits: list[float] = []
    retried = Retried(lambda e: True, 4, 0.001, cap=0.003, on_wait=lambda e, s: waits.append(s))
    assert retried(Flaky([OSError()] * 4)) == "answer"
    assert waits == [0.001, 0.002, 0.003, 0.003]
