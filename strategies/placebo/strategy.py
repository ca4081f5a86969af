"""`placebo`: a control arm. At every step, neutral text with no task information, of the same token count as a
reference strategy's delivery on that step, under the reference's own header and placement (agent-memory-bench's
length-matched placebo; docs/controls.md).

The reference (option `match`: `full`, the default, or any design that declares its frame, strategies/frame.py)
is built here from the reference's memory artifact (`memory_of`: its memory_by_strategy entry) and asked for its
delivery at each step; its frame (tag, header, instruction; ACE's section headings, a budget's omission note) is
kept, and every other line becomes a line of the same token count (the run's tokenizer,
as `full` counts its block) drawn from a fixed neutral text shipped beside this module (`placebo_text.txt`:
self-written nature prose, no tool, policy or domain word). A bullet keeps its shape with a placebo id (`[p1]`,
ACE's counters kept), so a reader that knows memory by its bullets sees as many bullets, none of them a lesson.

Deterministic per task and step: the text depends only on the task id and the reference's delivery, so it is
as stable within an episode as the reference is (a `full` block's placebo is cacheable as `full` is).
`full − placebo` is the content's effect, `placebo − none` the length's. The reference never learns: an online
design's placebo matches its starting block; `length_tokens` sets the content's tokens per step instead (a grown
block's size, read from the design's run), under the design's frame.
"""

from __future__ import annotations

import hashlib
import re
import threading
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Mapping, Optional

from strategies.base import Delivery, StepView, Strategy, StrategyBase, TaskView, Trajectory
from memory_kit.budget import token_counter
from strategies.controls import check_match
from strategies.declaration import Declaration
from strategies.frame import Frame
from strategies.options import option
from strategies.registry import (StrategyContext, available, declaration, delivered_frame, known_options,
                                 strategy_class)

SOURCE = Path(__file__).with_name("placebo_text.txt")
# a bullet line of either format: `- [id] text` (render_guidelines) or `[id] helpful=X harmful=Y :: text` (ACE)
_BULLET = re.compile(r"^(\s*(?:[-*]\s+)?\[)([^\]\s]+)(\]\s+(?:helpful=-?\d+\s+harmful=-?\d+\s+::\s+)?)(\S.*)$")
_FRAME = re.compile(r"^\s*(?:</?[a-z_]+>|## .*|\(\d+ lower-priority .* omitted to fit the budget\.\))\s*$")


@lru_cache(maxsize=1)
def neutral_words() -> tuple[str, ...]:
    words = tuple(SOURCE.read_text(encoding="utf-8").split())
    if not words:
        raise ValueError(f"placebo: the neutral text {SOURCE} is empty")
    return words


def _start(task_id: str, reference_text: str, n: int) -> int:
    digest = hashlib.sha256(f"placebo|{task_id}|{reference_text}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % n


def _fill(prefix: str, target: int, start: int, count: Callable[[str], int]) -> tuple[str, int]:
    """The line `prefix` + neutral words from `start` whose token count is closest to `target` (at least one
    word), and how many words it took. Binary search: a few counts per line, whatever its length."""
    words = neutral_words()

    def line(k: int) -> str:
        return prefix + " ".join(words[(start + i) % len(words)] for i in range(k))

    lo, hi = 1, max(1, target)
    while count(line(hi)) < target:  # rare words are several tokens, common ones one: grow until past it
        lo, hi = hi, 2 * hi
    while lo < hi:  # smallest k reaching the target
        mid = (lo + hi) // 2
        lo, hi = (mid + 1, hi) if count(line(mid)) < target else (lo, mid)
    k = lo if lo == 1 or abs(count(line(lo)) - target) <= abs(count(line(lo - 1)) - target) else lo - 1
    return line(k), k


def neutral_block(reference_text: str, task_id: str, count: Callable[[str], int], frame: Optional[Frame] = None) -> str:
    """`reference_text` with every line but its frame replaced by neutral text of the same token count: the
    frame's tag, header and instruction when the block opens with its tag, else the lines before the first bullet."""
    lines = reference_text.splitlines()
    first = next((i for i, text in enumerate(lines) if _BULLET.match(text)), len(lines))
    if frame is not None and lines and lines[0] == f"<{frame.tag}>":
        first = 1 + len(frame.head())
    at, n, out = _start(task_id, reference_text, len(neutral_words())), 0, []
    for i, text in enumerate(lines):
        if i < first or _FRAME.match(text) or not text.strip():
            out.append(text)
            continue
        m = _BULLET.match(text)
        if m:
            n += 1
        prefix = f"{m.group(1)}p{n}{m.group(3)}" if m else ""
        made, used = _fill(prefix, count(text), at, count)
        out.append(made)
        at += used
    return "\n".join(out)


@dataclass(frozen=True)
class PlaceboOptions:
    """Its own `match` and `length_tokens`; every other name is its reference's (a plugin design's too), passed
    on to the reference it builds and checked there."""

    match: str = "full"  # the reference: a design that declares its frame
    length_tokens: Optional[int] = option(None, min=1, means="an integer >= 1")  # null: the reference's length
    reference: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        check_match("placebo", self.match)
        anyone = {o for name in available() for o in (_known(name) or ())}
        unknown = sorted(set(self.reference) - anyone)
        if unknown:
            raise ValueError(f"strategy 'placebo': unknown option(s) {unknown}; it takes ['match', 'length_tokens'] "
                             "and its reference's options")
        declaration(self.match).parse(self.match, reference_options(self))


def reference_options(opts: PlaceboOptions) -> dict[str, Any]:
    """The options its reference takes (another strategy's option is meant for that one in a sweep, the registry's
    rule, so it is not passed on)."""
    takes = _known(opts.match)
    return {k: v for k, v in opts.reference.items() if takes is None or k in takes}


@dataclass
class Placebo(StrategyBase):
    name: str = "placebo"
    declaration = Declaration(options=PlaceboOptions, gather="reference", memory_of=lambda opts: opts.match,
                              framed=lambda opts: delivered_frame(opts.match, reference_options(opts)))
    reference: Optional[Strategy] = None
    match: str = "full"
    frame_used: Optional[Frame] = None  # the reference's frame as configured
    length_tokens: Optional[int] = None
    count_tokens: Callable[[str], int] = field(default_factory=lambda: token_counter(None), repr=False)
    _made: dict[tuple[str, str], Delivery] = field(default_factory=dict, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def deliver(self, task: TaskView, step: StepView) -> Delivery:
        if self.reference is None:
            raise ValueError("placebo: built without its reference strategy (use Placebo.create)")
        if self.length_tokens is not None and self.frame_used is not None:
            return self._fixed(str(task.task_id))
        return self._placebo(task.task_id, self.reference.deliver(task, step))

    def _fixed(self, task_id: str) -> Delivery:
        """`length_tokens` of neutral text as one bullet under the reference's frame, every step of the task."""
        assert self.frame_used is not None and self.length_tokens is not None
        key = (task_id, "")
        with self._lock:
            made = self._made.get(key)
        if made is None:
            line, _ = _fill("- [p1] ", self.length_tokens, _start(task_id, "", len(neutral_words())), self.count_tokens)
            made = Delivery((), self.frame_used.wrap([line]))
            with self._lock:
                made = self._made.setdefault(key, made)
        return made

    def _placebo(self, task_id: str, ref: Delivery) -> Delivery:
        key = (str(task_id), ref.text)
        with self._lock:
            made = self._made.get(key)
        if made is None:
            refit = ref.refit
            made = Delivery((), neutral_block(ref.text, str(task_id), self.count_tokens, self.frame_used)
                            if ref.text else "",
                            refit=(lambda budget: self._placebo(task_id, refit(budget))) if refit else None)
            with self._lock:
                made = self._made.setdefault(key, made)
        return made

    def record_facts(self, trajectory: Optional[Trajectory]) -> Mapping[str, Any]:
        return {"control_arm": f"placebo:{self.match}"}

    @classmethod
    def create(cls, ctx: StrategyContext) -> "Placebo":
        opts = cls.declaration.parse(cls.name, ctx.options)
        rest = reference_options(opts)
        # its own copy of the reference, never writing the reference's artifacts (an ACE load's history)
        reference = strategy_class(opts.match).create(replace(ctx, options=rest, artifacts_dir=None))
        return cls(options=dict(ctx.options), reference=reference, match=opts.match,
                   count_tokens=token_counter(ctx.model), frame_used=delivered_frame(opts.match, rest),
                   length_tokens=opts.length_tokens)


def _known(name: str) -> Optional[tuple[str, ...]]:
    try:
        return known_options(name)
    except Exception:
        return None


