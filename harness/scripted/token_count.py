"""A scripted model's prompt tokens, as LiteLLM's token_counter counts them, one message at a time.

`litellm.token_counter(model, messages=M)` (no tools) is the sum of each message's own count plus 3, the reply
primer: LiteLLM counts messages one by one (litellm_core_utils/token_counter.py, `_count_messages`). An
episode's prompt grows by a message or two per step, so counting all of it at every step is quadratic: it was
~30% of the simulated world's sweep. Here each message's count is kept (keyed by a digest of the message) and
summed. The first prompt of two or more messages in a process is also counted whole: if a LiteLLM version ever
counts otherwise, the sum is never used (tests/test_scripted_token_count.py compares both on real prompts).
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from typing import Any

import litellm

REPLY_PRIMER = 3  # what token_counter adds to any list of messages when no tools are given
_MAX_KEPT = 50_000  # message counts remembered per process (an episode's messages repeat at each of its steps)
_counts: OrderedDict[tuple[str, str], int] = OrderedDict()
_lock = threading.Lock()
_adds_up: bool | None = None  # None: not checked yet in this process


def prompt_tokens(model: str, messages: list[dict[str, Any]]) -> int:
    """`litellm.token_counter(model=model, messages=messages)`, from kept per-message counts."""
    global _adds_up
    if _adds_up is False:
        return litellm.token_counter(model=model, messages=messages)
    total = REPLY_PRIMER + sum(_message_tokens(model, m) for m in messages)
    if _adds_up is None and len(messages) > 1:
        _adds_up = total == litellm.token_counter(model=model, messages=messages)
        if not _adds_up:
            return litellm.token_counter(model=model, messages=messages)
    return total


def _message_tokens(model: str, message: dict[str, Any]) -> int:
    key = (model, hashlib.sha1(json.dumps(message, sort_keys=True, default=str).encode()).hexdigest())
    with _lock:
        if key in _counts:
            _counts.move_to_end(key)
            return _counts[key]
    count = litellm.token_counter(model=model, messages=[message]) - REPLY_PRIMER
    with _lock:
        _counts[key] = count
        while len(_counts) > _MAX_KEPT:
            _counts.popitem(last=False)
    return count
