"""A record's `error` label, and the exceptions that map to one.

Only "infra" (failures outside the agent and the strategy that persisted after retries: provider down, rate
limit, timeout, a dead engine worker) leaves the denominator of success rates. Every other label is an
ordinary failed episode, so a treatment that breaks the agent (an overflowing prompt, a request the provider
refuses, a crashing strategy) is charged for it. Upstream tau2 does the same: it drops only simulations that
raised an infrastructure error after its retries, and counts USER_ERROR terminations as failures. Which
provider error ends as which label: harness/serving/provider_errors.py.
"""

from __future__ import annotations

import traceback
from typing import TYPE_CHECKING, Any, Optional, TextIO

from harness.serving.faults import ContextOverflow, InfraError, ProviderUnusable, RequestRejected
from memory_kit.role_client import RoleProviderUnusable

if TYPE_CHECKING:
    from harness.row import RowLike
    from strategies import Strategy

INFRA = "infra"
CONTEXT_OVERFLOW = "context_overflow"
REQUEST_REJECTED = "request_rejected"  # a content filter or another refused request
USER_SIMULATOR = "user_simulator"
AGENT = "agent"
MAX_STEPS = "max_steps"
STRATEGY = "strategy"
HARNESS = "harness"
LABELS = (INFRA, CONTEXT_OVERFLOW, REQUEST_REJECTED, USER_SIMULATOR, AGENT, MAX_STEPS, STRATEGY, HARNESS)
LOUD = (STRATEGY, HARNESS)  # bugs, not outcomes: printed at the end of a job and kept in the manifest


class StrategyError(RuntimeError):
    """An exception raised inside a strategy's build / deliver / update: the treatment failed, not the run."""

    def __init__(self, strategy: str, phase: str, cause: BaseException):
        super().__init__(f"strategy {strategy!r} raised in {phase}(): {type(cause).__name__}: {cause}")
        self.strategy, self.phase, self.cause = strategy, phase, cause


class UserSimulatorError(RuntimeError):
    """The user simulator answered with something unusable (malformed tool call, empty message).

    A failed episode, as tau2's USER_ERROR termination is. A provider failure of the simulator after retries
    is still an InfraError.
    """


def call_strategy(strategy: Strategy, phase: str, *args: object) -> Any:
    """strategy.<phase>(*args) (a member of the Strategy protocol, called by name), with any exception wrapped in
    StrategyError (the runner labels it "strategy"), except a role's provider that is unusable (bad key, unknown
    model): ProviderUnusable, which stops the job as the agent's own would."""
    method = getattr(strategy, phase)  # dispatch, not a probe: every phase is a protocol member
    try:
        return method(*args)
    except RoleProviderUnusable as exc:
        raise ProviderUnusable(f"strategy {strategy.name!r}: {exc}") from exc
    except Exception as exc:
        raise StrategyError(strategy.name, phase, exc) from exc


def classify(exc: BaseException) -> tuple[str, str]:
    """(error label, error_detail) for an exception that ended an episode."""
    if isinstance(exc, ContextOverflow):
        return CONTEXT_OVERFLOW, str(exc)
    if isinstance(exc, RequestRejected):
        return REQUEST_REJECTED, str(exc)
    if isinstance(exc, StrategyError):
        if isinstance(exc.cause, InfraError):  # the strategy's own LLM provider failed after retries
            return INFRA, str(exc)
        if isinstance(exc.cause, RequestRejected):  # the provider refused the strategy's own request
            return REQUEST_REJECTED, str(exc)
        return STRATEGY, f"{exc}\n{_trace(exc.cause)}"
    if isinstance(exc, UserSimulatorError):
        return USER_SIMULATOR, str(exc)
    if isinstance(exc, InfraError):
        return INFRA, str(exc)
    return HARNESS, f"{type(exc).__name__}: {exc}\n{_trace(exc)}"


def _trace(exc: BaseException) -> str:
    return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__, limit=-6)).strip()


class FailureTally:
    """Error counts of one job, with the first details of the loud kinds (strategy / harness bugs)."""

    KEEP = 3  # details kept per loud label: enough to debug, small enough for the manifest

    def __init__(self) -> None:
        self.errors: dict[str, int] = {}
        self.details: dict[str, list[str]] = {}

    def add(self, record: RowLike) -> None:
        label = record.get("error")
        if not label:
            return
        self.errors[label] = self.errors.get(label, 0) + 1
        if label in LOUD and len(self.details.setdefault(label, [])) < self.KEEP:
            self.details[label].append(f"{record.get('task_id')} trial {record.get('trial')}: "
                                       f"{record.get('error_detail')}")

    def facts(self) -> dict[str, Any]:
        """For the manifest (store.close_job): counts per label, and the first details of strategy/harness."""
        return {"errors": dict(sorted(self.errors.items())), "infra_errors": self.errors.get(INFRA, 0),
                "failure_details": {k: v for k, v in self.details.items() if v}}

    def warn(self, job: str, stream: Optional[TextIO] = None) -> None:
        """A loud block on stderr when a strategy or the harness itself raised: these are bugs, not results."""
        import sys

        stream = stream or sys.stderr
        for label in LOUD:
            n = self.errors.get(label, 0)
            if not n:
                continue
            bar = "!" * 78
            print(f"{bar}\nmemdeliv: {job}: {n} episode(s) failed with error {label!r} "
                  f"({'an exception in the strategy' if label == STRATEGY else 'an unexpected exception'}); "
                  f"they count as failures. First:", file=stream)
            for line in self.details.get(label, []):
                print("  " + line.replace("\n", "\n    "), file=stream)
            print(bar, file=stream)
