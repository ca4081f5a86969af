"""What a provider error means for an episode: retry it, charge it to the treatment, or stop the job.

LiteLLM maps many providers' over-length messages to ContextWindowExceededError, but not all of them in
every version and not behind every route (an OpenAI-compatible server answers with its own words), so the
message is read too. The kinds, and the record label each ends as (harness/errors.py):

  RETRY     rate limit, 5xx, timeout, connection error, empty reply: retried, then `infra`
  INFRA     permission denied, payment required, an API error of no known kind: `infra` at once
  OVERFLOW  the request does not fit the model's context: `context_overflow` (the treatment's failure)
  REJECTED  any other refused request (a content filter, an invalid request): `request_rejected` (counted)
  STOP      bad or missing credentials, unknown model, a parameter LiteLLM refuses: every call would fail alike,
            so the job stops with exit 2 and writes nothing for the episodes it did not run

A RETRY error that never reached the provider (connection refused, DNS failure, a timeout while connecting) also
names the endpoint it could not reach (`unreachable_endpoint`): when a job's first episodes all end so, the job
stops (harness/runner/reach.py). LiteLLM reports a refused connection as an InternalServerError, so the cause
chain is read, not the class.
"""

from __future__ import annotations

import re
import socket
from urllib.parse import urlsplit, urlunsplit

import httpx
import litellm

RETRY, INFRA, OVERFLOW, REJECTED, STOP = "retry", "infra", "overflow", "rejected", "stop"

E = litellm.exceptions
_RETRY = (E.RateLimitError, E.InternalServerError, E.ServiceUnavailableError, E.BadGatewayError,
          E.APIConnectionError, E.Timeout)
_STOP = (E.AuthenticationError, E.NotFoundError, E.UnsupportedParamsError)
_INFRA = (E.PermissionDeniedError, E.PaymentRequiredError)

# Over-length phrasings, lower case (each provider's own words; LiteLLM recognises some of them itself):
# OpenAI / vLLM / llama-cpp-python "maximum context length" and code "context_length_exceeded"; Anthropic
# "prompt is too long"; Gemini "exceeds the maximum number of tokens" and "input token count (n) exceeds";
# Bedrock "input is too long" and "too many input tokens"; llama.cpp "exceeds the available context size";
# llama-cpp-python's raw "exceed context window".
OVERFLOW_TEXT = re.compile(
    r"context_length_exceeded|maximum context length|context window exceeded|prompt is too long"
    r"|input is too long|too many input tokens|exceeds? the maximum number of tokens|input token count.{0,80}exceed"
    r"|exceeds? the available context size|exceeds? (?:the )?(?:model'?s? )?context (?:window|length|size)",
    re.IGNORECASE | re.DOTALL)
# No key reached the provider: the OpenAI SDK's words, which LiteLLM passes on as a 500
NO_CREDENTIALS_TEXT = re.compile(r"missing credentials|api_key client option must be set", re.IGNORECASE)
NO_ROUTE_TEXT = re.compile(r"LLM Provider NOT provided", re.IGNORECASE)  # LiteLLM, for a model string like "nope"


def is_overflow_text(text: str) -> bool:
    return bool(OVERFLOW_TEXT.search(text))


def kind_of(exc: BaseException) -> str | None:
    """The kind of a provider error (see the module docstring); None when `exc` is not a provider error."""
    if isinstance(exc, E.ContextWindowExceededError):
        return OVERFLOW
    if isinstance(exc, _STOP) or (isinstance(exc, (*_RETRY, E.APIError)) and NO_CREDENTIALS_TEXT.search(str(exc))) \
            or (isinstance(exc, E.BadRequestError) and NO_ROUTE_TEXT.search(str(exc))):
        return STOP
    if isinstance(exc, _RETRY):
        return RETRY
    if isinstance(exc, _INFRA):
        return INFRA
    if not isinstance(exc, (E.BadRequestError, E.UnprocessableEntityError, E.APIError)):
        return None
    if is_overflow_text(str(exc)):
        return OVERFLOW
    if isinstance(exc, (E.BadRequestError, E.UnprocessableEntityError)):  # content filters included
        return REJECTED
    return _kind_of_status(getattr(exc, "status_code", None))


def _kind_of_status(status: int | None) -> str:
    """An APIError LiteLLM did not map to a class: read its HTTP status."""
    if status in (401, 404):
        return STOP
    if status == 413:  # request entity too large: the request itself is over-length
        return OVERFLOW
    if status in (400, 422):
        return REJECTED
    if status in (408, 409, 429) or (status or 0) >= 500:
        return RETRY
    return INFRA


def stop_reason(exc: BaseException) -> str:
    """In plain words, why every call of the job would fail."""
    if NO_ROUTE_TEXT.search(str(exc)):
        return "LiteLLM cannot route this model string (give it as provider/model, e.g. openai/gpt-4.1)"
    if NO_CREDENTIALS_TEXT.search(str(exc)):
        return "no API key reached the provider (set its key variable, e.g. OPENAI_API_KEY, or model.api_key_env)"
    if isinstance(exc, E.AuthenticationError) or getattr(exc, "status_code", None) == 401:
        return "the provider refused the credentials (check the API key, e.g. model.api_key_env)"
    if isinstance(exc, E.NotFoundError) or getattr(exc, "status_code", None) == 404:
        return "the provider does not know this model (check model.name, and model.kwargs.api_base if set)"
    return "LiteLLM refused a request parameter (check model.kwargs)"


# never reached the provider: httpx's connect failures (LiteLLM's OpenAI-compatible routes, the Anthropic SDK) and
# the socket errors under any other client
_NOT_CONNECTED = (httpx.ConnectError, httpx.ConnectTimeout, ConnectionRefusedError, socket.gaierror)


def unreachable_endpoint(exc: BaseException, api_base: str | None = None) -> str | None:
    """The endpoint a call could not connect to (its URL without query or credentials: `api_base`, else the
    provider's default host), or None when the error is not a failure to connect."""
    chain: list[BaseException] = []
    seen: set[int] = set()
    link: BaseException | None = exc
    while link is not None and id(link) not in seen and len(chain) < 20:
        seen.add(id(link))
        chain.append(link)
        link = link.__cause__ or link.__context__
    if not any(isinstance(e, _NOT_CONNECTED) for e in chain):
        return None
    for e in chain:
        if isinstance(e, (httpx.ConnectError, httpx.ConnectTimeout)):
            try:
                return bare_url(str(e.request.url))
            except RuntimeError:  # an httpx error raised without its request
                break
    return bare_url(api_base) if api_base else "the provider's default endpoint"


def bare_url(url: str) -> str:
    """scheme://host[:port]/path: no user:password, no query (a key can travel in either)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", "")) or url
