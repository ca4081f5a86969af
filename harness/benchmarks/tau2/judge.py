"""tau2's NL-assertion judge, called through our client so its tokens and cost are ledgered apart.

tau2's `NLAssertionsEvaluator` builds its prompt and parses the verdict itself, then calls the module-level
`generate` with its fixed default model. We keep tau2's prompt and parsing and only route that one call: the
module's `generate` is replaced once by a dispatcher that uses the judge bound in the *current context*
(`judging(client, ledger)`, set around one episode's evaluation, in the episode's thread) and writes the call
into the episode's ledger (the frame's: the one the runner opened for the episode). Concurrent episodes with
different judges (or jobs with different judge models) never see each other's; a call with no judge bound goes to tau2's
original function, unchanged.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Callable, Iterator, Optional

import tau2.evaluator.evaluator_nl_assertions as nl_module
from tau2.data_model.message import AssistantMessage
from tau2.utils.llm_utils import to_litellm_messages

from harness.ledger import Ledger
from harness.serving.model_client import ModelClient

_judge: ContextVar[Optional[tuple[ModelClient, Ledger]]] = ContextVar("memdeliv_tau2_judge", default=None)
_install_lock = threading.Lock()
_original: Optional[Callable[..., Any]] = None


def _dispatch(model: str, messages: list, *args: Any, **kwargs: Any) -> AssistantMessage:
    bound = _judge.get()
    if bound is None:
        assert _original is not None  # installed before any judge is bound
        return _original(model, messages, *args, **kwargs)
    client, ledger = bound
    completion = client.complete(to_litellm_messages(messages))
    ledger.add_judge_call(completion.usage)
    return AssistantMessage(role="assistant", content=completion.content,
                            cost=completion.usage.cost_usd,
                            usage={"prompt_tokens": completion.usage.prompt_tokens,
                                   "completion_tokens": completion.usage.completion_tokens})


def install() -> None:
    global _original
    with _install_lock:
        if _original is None:
            _original = nl_module.generate
            nl_module.generate = _dispatch


@contextmanager
def judging(client: Optional[ModelClient], ledger: Ledger) -> Iterator[None]:
    """Within the block, tau2's NL-assertion judge in this context is `client`, ledgered into `ledger`."""
    if client is None:
        yield
        return
    install()
    token = _judge.set((client, ledger))
    try:
        yield
    finally:
        _judge.reset(token)
