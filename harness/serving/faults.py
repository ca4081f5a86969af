"""What a model call can end in besides an answer, as exceptions: a module of its own, without LiteLLM (seconds of
import), so that what only classifies failures (harness/errors.py, the executors) and a command line refused by its
config check never load it. harness/serving/model_client.py raises them; everyone imports them from here."""

from __future__ import annotations

# How often a failed call is tried again, and the first wait (doubling after): model.max_retries and
# model.retry_backoff_s default to these (harness/config.py), as does a ModelClient built without them
MAX_RETRIES = 3
RETRY_BACKOFF_S = 2.0


class ProviderFault(RuntimeError):
    """The provider answered 200 with nothing usable (an empty choice list): its fault, retried like a 500."""


# Which provider errors are retried, charged to the treatment or stop the job: harness/serving/provider_errors.py.
# A body that is not JSON arrives from LiteLLM as InternalServerError, so malformed provider output is retried.


class InfraError(RuntimeError):
    """The provider or the machinery failed, not the agent, and still did after retries: error `infra`, counted as a
    failed episode by default (tau2-bench's leaderboard convention) and reported apart (docs/failure-accounting.md)."""


class ContextOverflow(RuntimeError):
    """The prompt no longer fits the model's context window.

    Not an InfraError: a longer memory block is what overflows, so the episode is a failure of the treatment
    (error "context_overflow", kept in the denominator; see harness/errors.py)."""


class RequestRejected(RuntimeError):
    """The provider refused this request: a content filter, or another 400 that is not an overflow.

    Not an InfraError: what a strategy puts in the prompt can trip a filter, so the episode is a failure
    (error "request_rejected", kept in the denominator)."""


class ProviderUnusable(BaseException):
    """Every call of this job would fail the same way (bad credentials, unknown model): stop the job now.

    A BaseException, like KeyboardInterrupt, so that no `except Exception` on the way (tau2's orchestrator, an
    episode's labelling, a strategy wrapper) turns it into one more failed episode: no record is written for it,
    and a rerun after the fix resumes where the job stopped (harness/run.py prints it and exits 2)."""

