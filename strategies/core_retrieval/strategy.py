"""`core_retrieval`: ALTK-Evolve's "core + retrieval" delivery (IBM calls it curated retrieval).

- guidelines with support >= core_support are the core: always delivered;
- guidelines with support < min_support are dropped;
- of the rest, the top_k whose *source task* is most similar (cosine) to the task at hand, skipping a
  candidate whose text is >= core_duplicate similar to a core guideline or >= kept_duplicate similar to
  one already kept.

The query is only what the agent has seen: the task statement where the benchmark shows one (AppWorld), else
the user's first message (τ²: before it, core guidelines only). The selection is made once per task (so the
memory block stays in the cacheable prompt prefix) unless `rerank_each_step` asks to re-rank on the visible
conversation (that query plus the last two messages) at every step. A retrieval pool of at least
`ann_threshold` guidelines is ranked through an approximate (IVF) index instead of the exact scan; the
duplicate skips are the same (docs/retrieval.md). All knobs are options in configs/strategy/core_retrieval.yaml.
The consequence the seed article warns about is by design: a low-support guideline whose source task does not
resemble the new task never reaches the model.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from memory_kit.budget import fit_budget, token_counter
from memory_kit.selection import GuidelineIndex, SelectionOptions
from strategies.base import (Delivery, Embedder, Guideline, StepView, StrategyBase, TaskView, render_guidelines,
                             seen_task_text)
from strategies.declaration import Declaration
from strategies.plan_block import NO_ARTIFACT, Count, PlanEstimate, artifact_items, median_window
from strategies.registry import StrategyContext


def core_and_top_k(memory: Optional[str], count: Count, opts: Any) -> PlanEstimate:
    """The core plus top_k median-length guidelines of the rest."""
    items = artifact_items(memory)
    if items is None:
        return NO_ARTIFACT
    kept = [g for g in items if g.support >= opts.min_support]
    core = [g for g in kept if g.support >= opts.core_support]
    pool = [g for g in kept if g.support < opts.core_support]
    picked = median_window(pool, opts.top_k, lambda g: len(g.text)) if pool and opts.top_k else []
    return PlanEstimate(float(count(render_guidelines(core + picked))), f"core {len(core)} + top_k {len(picked)}")


@dataclass
class CoreRetrieval(StrategyBase):
    name: str = "core_retrieval"
    declaration = Declaration(options=SelectionOptions, plan=core_and_top_k)
    guidelines: tuple[Guideline, ...] = ()
    embedder: Embedder | None = None
    count_tokens: Callable[[str], int] | None = field(default=None, repr=False)
    _index: GuidelineIndex = field(init=False, repr=False)
    _cache: dict[tuple[str, str], Delivery] = field(init=False, repr=False, default_factory=dict)
    _lock: threading.Lock = field(init=False, repr=False, default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.opts = self.typed_options()
        if self.embedder is None:
            from memory_kit.embeddings import make_embedder

            self.embedder = make_embedder(self.opts.embedder, cache_dir=self.opts.embed_cache)
        self._index = GuidelineIndex.build(self.guidelines, self.embedder, self.opts)
        self.count_tokens = self.count_tokens or token_counter(None)

    def query_text(self, task: TaskView, step: StepView) -> str:
        """Only what the agent has seen; "" before it knows its task (then only the core is delivered)."""
        seen = seen_task_text(task, step)
        if not seen or not self.opts.rerank_each_step:
            return seen
        recent = [str(m.get("content") or "") for m in step.messages[-2:] if m.get("content")]
        return "\n".join([seen, *recent])

    def deliver(self, task: TaskView, step: StepView) -> Delivery:
        query = self.query_text(task, step)
        key = (task.task_id, query)
        with self._lock:
            cached = self._cache.get(key)
        if cached is not None:
            return cached
        assert self.embedder is not None and self.count_tokens is not None  # both set in __post_init__
        chosen = self._index.select(self.embedder.embed([query])[0]) if query else list(self._index.core)
        # select() lists core (by support) then retrieved (by similarity): that order is the priority
        delivery = fit_budget(chosen, [-i for i in range(len(chosen))],
                              lambda kept, note: render_guidelines(kept, note=note), self.count_tokens,
                              self.opts.budget_tokens)
        with self._lock:
            self._cache[key] = delivery
        return delivery

    @classmethod
    def create(cls, ctx: StrategyContext) -> "CoreRetrieval":
        return cls(options=dict(ctx.options), guidelines=tuple(ctx.require_memory("core_retrieval")),
                   count_tokens=token_counter(ctx.model))

