"""`exp_rag`: Evo-Memory's ExpRAG baseline (Wei et al. 2025, arXiv 2511.20857): the top_k past episodes whose
task is most similar to the task at hand, condensed, delivered as worked examples with their outcome.

Defaults: Evo-Memory's code is unreleased and its paper (Section 3.2) states no k, so `top_k` 4 is the value of
an UNOFFICIAL port, zhaosnw/evo_mem (evo_memory/agents/exprag.py), not of the paper; the rest is the paper's
method: similarity of the task input to each stored experience's input by a dense embedder, the experience's
feedback (success / failure) shown.
The memory is learned from train only: an experiences artifact (memory_kit/experiences.py) built by
`make experiences` from a `none` run on train; its provenance is checked like every artifact's
(harness/provenance.py). Evo-Memory also appends each new episode to the store; here the store is frozen (the
test stream's episodes would otherwise be read back, with their labels, by later test tasks).

The query is only what the agent has seen (the task statement, else the user's first message, as
core_retrieval), so on τ² the first step, before the user has spoken, delivers nothing. The selection is made
once per task and cached, so the block stays in the cacheable prompt prefix.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import numpy as np

from strategies.base import Delivery, Embedder, Guideline, StepView, StrategyBase, TaskView, seen_task_text
from memory_kit.budget import fit_budget, token_counter
from strategies.declaration import Declaration
from memory_kit.experiences import FRAME, load_experiences, render_experiences
from strategies.options import BlockOptions, option
from strategies.plan_block import NO_ARTIFACT, Count, PlanEstimate, artifact_items, median_window
from strategies.registry import StrategyContext
from memory_kit.vector_search import id_rank, rank_rows, stable_similarity


@dataclass(frozen=True)
class ExpRagOptions(BlockOptions):  # budget_tokens: the least similar dropped first
    # an unofficial port's value; the paper states none
    top_k: int = option(4, min=1, source="zhaosnw/evo_mem evo_memory/agents/exprag.py: top_k=4")
    include_feedback: bool = option(True, source="exprag.py: include_feedback=True")  # the outcome shown
    embedder: str = "minilm"  # see memory_kit.embeddings.make_embedder
    embed_cache: Optional[str] = ".cache/embeddings"  # null: no on-disk cache


def top_k_experiences(memory: Optional[str], count: Count, opts: Any) -> PlanEstimate:
    """The top_k median-length experiences."""
    items = artifact_items(memory)
    if items is None:
        return NO_ARTIFACT
    picked = median_window(items, opts.top_k, lambda g: len(g.text))
    return PlanEstimate(float(count(render_experiences(picked))), f"top_k {len(picked)} experiences")


def check_experiences(path: Optional[str]) -> None:
    load_experiences(path, "exp_rag")


@dataclass
class ExpRag(StrategyBase):
    name: str = "exp_rag"
    declaration = Declaration(options=ExpRagOptions, frame=FRAME, plan=top_k_experiences,
                              check_memory=check_experiences)
    experiences: tuple[Guideline, ...] = ()
    embedder: Embedder | None = None
    count_tokens: Callable[[str], int] | None = field(default=None, repr=False)
    _vectors: np.ndarray = field(init=False, repr=False)
    _cache: dict[tuple[str, str], Delivery] = field(init=False, repr=False, default_factory=dict)
    _lock: threading.Lock = field(init=False, repr=False, default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.opts = self.typed_options()
        if self.embedder is None:
            from memory_kit.embeddings import make_embedder

            self.embedder = make_embedder(self.opts.embedder, cache_dir=self.opts.embed_cache)
        texts = [g.source_task_text or g.text for g in self.experiences]
        self._vectors = (np.asarray(self.embedder.embed(texts), dtype=np.float32) if texts
                         else np.zeros((0, 1), dtype=np.float32))
        self._tie_rank = id_rank([g.id for g in self.experiences])
        self.count_tokens = self.count_tokens or token_counter(None)

    def retrieve(self, query: str) -> list[Guideline]:
        """The top_k experiences by similarity of their task to `query`, most similar first (ties: lower id)."""
        if not query or not self.experiences:
            return []
        assert self.embedder is not None  # set in __post_init__
        sims = stable_similarity(self._vectors @ np.asarray(self.embedder.embed([query])[0], dtype=np.float32))
        order = rank_rows(sims, self._tie_rank)[: self.opts.top_k]
        return [self.experiences[int(i)] for i in order]

    def deliver(self, task: TaskView, step: StepView) -> Delivery:
        query = seen_task_text(task, step)
        key = (task.task_id, query)
        with self._lock:
            cached = self._cache.get(key)
        if cached is not None:
            return cached
        assert self.count_tokens is not None  # set in __post_init__
        picked, frame = self.retrieve(query), self.declaration.delivered_frame(self.opts) or FRAME
        delivery = fit_budget(picked, [-i for i in range(len(picked))],
                              lambda kept, note: render_experiences(kept, note, self.opts.include_feedback, frame),
                              self.count_tokens, self.opts.budget_tokens, noun="experiences")
        with self._lock:
            self._cache[key] = delivery
        return delivery

    @classmethod
    def create(cls, ctx: StrategyContext) -> "ExpRag":
        return cls(options=dict(ctx.options), experiences=tuple(load_experiences(ctx.memory_path, "exp_rag")),
                   count_tokens=token_counter(ctx.model))
