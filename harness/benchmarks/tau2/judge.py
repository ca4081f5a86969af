"""tau2's NL-assertion judge, called through our client so its tokens and cost are ledgered apart.

tau2's `NLAssertionsEvaluator` builds its prompt and parses the verdict itself, then calls the module-level
`generate` with its fixed default model. We keep tau2's prompt and parsing and only route that one call: the
module's `generate` is replaced once by a dispatcher that uses the judge bound to the *current thread*
(`judging(...)`, set around one episode's evaluation). Each episode evaluates in its own thread, so concurrent
episodes with different judges (or jobs with different judge models) never see each other's; a call with no
judge bound goes to tau2's original function, unchanged.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Optional

import tau2.evaluator.evaluator_nl_assertions as nl_module
from tau2.data_model.message import AssistantMessage
from tau2.utils.llm_utils import to_litellm_messages

from harness.ledger import Ledger
from harness.serving.model_client import ModelClient

_bound = threading.local()
_install_lock = threading.Lock()
_original: Optional[Callable[..., Any]] = None


def _dispatch(model: str, messages: list, *args: Any, **kwargs: Any) -> AssistantMessage:
    judge = getattr(_bound, "judge", None)
    if judge is None:
        return _original(model, messages, *args, **kwargs)
    client, ledger = judge
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
    """Within the block, tau2's NL-assertion judge on this thread is `client`, ledgered into `ledger`."""
    if client is None:
        yield
        return
    install()
    previous = getattr(_bound, "judge", None)
    _bound.judge = (client, ledger)
    try:
        yield
    finally:
        _bound.judge = previous
