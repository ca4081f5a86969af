"""One step's request: placed by the benchmark's Layout, and fitted to the window by the context policy.

Following seed 002 every turn is one self-contained request; when it would exceed the model's window
(`benchmark.context_policy=priority_drop`) blocks are dropped by priority, never by cutting the tail:
  1. the oldest conversation turns after the first user message (a turn: a user message, an agent reply, or
     one tool call with its result), folded into a summary MADE BY CODE (summary.py), never the newest round;
  2. memory items, lowest priority first (the strategy's own order, through `Delivery.refit`);
  3. the oldest lines of that summary (it grows with every folded turn), noted in the summary;
and never the system instructions, the policy, the first or the latest user message. Every drop is written
into the request ("[3 earlier turns summarised ...]", "(5 lower-priority lessons omitted ...)").
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable, Optional

from harness.assembly.layout import Layout
from harness.assembly.options import check
from harness.assembly.summary import SUMMARY_MAX_LINES, summary_message
from harness.serving.faults import ContextOverflow
from strategies import Delivery

Messages = list[dict[str, Any]]
Measure = Callable[[Messages], int]


@dataclass(frozen=True)
class Assembled:
    messages: Messages
    delivery: Delivery  # the memory that reached the model
    summarised_turns: int = 0  # conversation units folded into the code-made summary
    context_dropped: tuple[str, ...] = ()  # memory ids dropped by the context policy (not the strategy's budget)


def assemble(system: str, history: Messages, delivery: Delivery, layout: Layout, *, policy: str = "fail",
             limit: Optional[int] = None, measure: Optional[Measure] = None,
             strict_limit: bool = False) -> Assembled:
    """The request for one step in the benchmark's `layout`. `measure(messages)` counts the request as it
    will be sent (tools included); `limit` is the prompt budget (providers.context_limit).

    policy "fail": the request goes as it is (the provider reports an overflow), except that a known
    `strict_limit` (model.context_window set by the user) is enforced here with ContextOverflow.
    policy "priority_drop": drop blocks in the order of the module doc until it fits, else ContextOverflow.
    """
    check(context_policy=policy)
    full = layout.place(system, history, delivery.text)
    if limit is None or measure is None:
        return Assembled(full, delivery)
    size = measure(full)
    if size <= limit:
        return Assembled(full, delivery)
    if policy == "fail":
        if strict_limit:
            raise ContextOverflow(f"request of ~{size} tokens over the limit {limit} (model.context_window)")
        return Assembled(full, delivery)
    head, units, latest = layout.split(history)
    # oldest first; never the latest user message nor the newest unit (the tool round the agent must read)
    foldable = [i for i in range(len(units)) if i not in (latest, len(units) - 1)]

    def build(k: int, memory: Delivery, keep_lines: Optional[int] = None) -> Messages:
        """The request with the `k` oldest foldable units summarised (a summary each side of the latest
        user message, so the conversation still reads in order)."""
        gone = set(foldable[:k])
        early = [units[i] for i in sorted(gone) if i < latest]
        late = [units[i] for i in sorted(gone) if i > latest]
        def folded(part: list[Messages]) -> dict[str, Any]:
            return summary_message(part, keep_lines, layout.summarise)

        kept: Messages = [folded(early)] if early else []
        if late and latest < 0:  # one turn so far: its summary follows the (first and latest) user message
            kept.append(folded(late))
        for i, unit in enumerate(units):
            if i not in gone:
                kept += unit
            if i == latest and late:
                kept.append(folded(late))
        return layout.place(system, [*head, *kept], memory.text)

    def fewest(memory: Delivery) -> Optional[int]:
        """Fewest units folded that fit; None if even all of them do not."""
        lo, hi = 0, len(foldable)
        if measure(build(hi, memory)) > limit:
            return None
        while lo < hi:
            mid = (lo + hi) // 2
            lo, hi = (lo, mid) if measure(build(mid, memory)) <= limit else (mid + 1, hi)
        return lo

    # 1. the oldest turns, folded into the code-made summary
    folded = fewest(delivery)
    if folded is not None:
        return Assembled(build(folded, delivery), delivery, folded)
    # 2. memory, lowest priority first (with every foldable turn folded)
    everything = len(foldable)
    memory = _shrink(delivery, lambda d: measure(build(everything, d)), limit)
    dropped = tuple(i for i in delivery.ids if i not in set(memory.ids))
    request = build(everything, memory)
    if measure(request) <= limit:
        return Assembled(request, memory, everything, dropped)
    # 3. the summary's oldest lines (it grows with every folded turn): keep as many of the newest as fit
    lo, hi = 0, SUMMARY_MAX_LINES
    if everything and measure(build(everything, memory, 0)) <= limit:
        while lo < hi:
            mid = (lo + hi + 1) // 2
            lo, hi = (mid, hi) if measure(build(everything, memory, mid)) <= limit else (lo, mid - 1)
        return Assembled(build(everything, memory, lo), memory, everything, dropped)
    request = build(everything, memory, 0)
    raise ContextOverflow(f"request does not fit {limit} tokens even with {everything} turns summarised and "
                          f"{len(dropped)} memory items dropped: instructions, policy and the latest messages "
                          f"alone are ~{measure(request)} tokens")


def _shrink(delivery: Delivery, size: Callable[[Delivery], int], limit: int) -> Delivery:
    """The delivery refitted, by its own priorities, until the request fits (or the memory is gone)."""
    if delivery.empty:
        return delivery
    gone = Delivery((), "", dropped=tuple(dict.fromkeys([*delivery.dropped, *delivery.ids])))
    if delivery.refit is None:  # a plugin's plain Delivery: all or nothing, and the request says so
        note = Delivery((), f"(The memory block, {len(delivery.ids)} items, was omitted to fit the context window.)",
                        dropped=gone.dropped)
        return note if size(note) <= limit else gone
    without = size(gone)
    if without > limit:
        return gone
    budget = limit - without  # tokens the block may take, roughly; refit counts the block alone
    for _ in range(8):  # the request's count is not the block's: tighten until the whole request fits
        smaller = delivery.refit(max(1, budget))
        if smaller.empty:
            return replace(gone, dropped=smaller.dropped or gone.dropped)
        over = size(smaller) - limit
        if over <= 0:
            return smaller
        budget -= max(over, 1)
    return gone
