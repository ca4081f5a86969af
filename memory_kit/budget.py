"""A token budget for any strategy's memory block: drop the lowest-priority items first, and say so.

`strategy.options.budget_tokens` (null = unlimited) caps the rendered block. Each strategy ranks its own
items (`full`: support; `core_retrieval`: core before retrieved, then similarity; `ace`: helpful - harmful,
then recency); `fit_budget` keeps the highest-ranked items that fit, renders them in the strategy's own
display order, and writes the count of omitted items *inside* the block, so the model is told that memory
was cut rather than left to assume it saw everything. The returned Delivery carries the dropped ids (the
ledger records them per step) and a `refit(budget)` that the request assembly uses to shrink the block
further, by the same priorities, when the whole request would not fit the model's window.
"""

from __future__ import annotations

import threading
from functools import partial
from typing import Callable, Optional, Sequence

from strategies import Delivery, Guideline

FALLBACK_TOKENIZER_MODEL = "gpt-4o"  # only when the run names no model (unit tests)
OPTION = "budget_tokens"

# (kept guidelines in display order, note for the block or "") -> the block's text
Render = Callable[[Sequence[Guideline], str], str]


def omitted_note(n: int, noun: str = "lessons") -> str:
    return f"({n} lower-priority {noun} omitted to fit the budget.)" if n else ""


def token_counter(model: str | None) -> Callable[[str], int]:
    """litellm.token_counter for the run's model, memoised per text (the same text is counted often)."""
    import litellm

    cache: dict[str, int] = {}
    lock = threading.Lock()

    def count(text: str) -> int:
        if not text:
            return 0
        with lock:
            if text not in cache:
                cache[text] = int(litellm.token_counter(model=model or FALLBACK_TOKENIZER_MODEL, text=text))
            return cache[text]

    return count


def fit_budget(items: Sequence[Guideline], priority: Sequence[float], render: Render,
               count: Callable[[str], int], budget: Optional[int], noun: str = "lessons") -> Delivery:
    """The Delivery of `items` (display order) within `budget` tokens, lowest `priority` dropped first.

    Ties in priority keep the item shown earlier. budget=None keeps everything. The kept set is the
    largest top-priority prefix whose rendered block (with its omission note) fits; if not even the note
    fits, the block is empty and every id is reported dropped.
    """
    items = tuple(items)
    if len(priority) != len(items):
        raise ValueError(f"{len(items)} items but {len(priority)} priorities")
    refit = partial(fit_budget, items, tuple(priority), render, count, noun=noun)
    ranked = sorted(range(len(items)), key=lambda i: (-priority[i], i))  # best first

    def block(k: int) -> tuple[tuple[Guideline, ...], str]:
        keep = set(ranked[:k])
        kept = tuple(g for i, g in enumerate(items) if i in keep)
        return kept, render(kept, omitted_note(len(items) - k, noun))

    kept, text = block(len(items))
    if budget is None or count(text) <= budget:
        return Delivery(kept, text, refit=refit)
    lo, hi = -1, len(items) - 1  # invariant: block(hi + 1) is over; find the largest k <= hi that fits
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if count(block(mid)[1]) <= budget:
            lo = mid
        else:
            hi = mid - 1
    if lo < 0:
        return Delivery((), "", dropped=tuple(g.id for g in items), refit=refit)
    kept, text = block(lo)
    kept_ids = {g.id for g in kept}
    return Delivery(kept, text, dropped=tuple(g.id for g in items if g.id not in kept_ids), refit=refit)
