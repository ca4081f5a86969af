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
from typing import Any, Callable, Iterator, Optional, Sequence

import numpy as np

from strategies.base import (Delivery, Embedder, Guideline, StepView, StrategyBase, TaskView, render_guidelines,
                             seen_task_text)
from strategies.budget import fit_budget, token_counter
from strategies.declaration import Declaration
from strategies.options import budget_field, option
from strategies.plan_block import NO_ARTIFACT, Count, PlanEstimate, artifact_items, median_window
from strategies.registry import StrategyContext
from strategies.vector_search import IvfIndex, blas_limit, blas_threads_for, rank_rows, stable_similarity

_CHUNK = 65536  # rows per block when comparing the whole pool with the core set (bounds the temporary)


EVOLVE = "ALTK-Evolve (altk-evolve-core 1.7.1)"


@dataclass(frozen=True)
class RetrievalKnobs:
    """How the retriever selects (core_retrieval's, and on_demand's recall)."""

    core_support: int = option(3, min=1, source=f"{EVOLVE}: EVOLVE_CORE_SUPPORT")
    min_support: int = option(1, min=1, source=f"{EVOLVE}: EVOLVE_MIN_SUPPORT")
    top_k: int = option(10, min=0, source=f"{EVOLVE}: EVOLVE_RETRIEVAL_TOP_K")
    core_duplicate: float = 0.75  # skip a candidate this similar to a core guideline
    kept_duplicate: float = 0.90  # skip a candidate this similar to one already kept
    embedder: str = "minilm"  # see strategies.embeddings.make_embedder
    embed_cache: Optional[str] = ".cache/embeddings"  # null: no on-disk cache
    # pool this large or larger: IVF index (faiss); smaller: exact. null: exact
    ann_threshold: Optional[int] = option(10000, min=1)
    ann_nprobe: int = option(16, min=1)  # IVF lists scanned per query (more: slower, closer to exact)

    def __post_init__(self) -> None:
        if self.core_support < self.min_support:
            raise ValueError(f"need min_support <= core_support, got {self.min_support} > {self.core_support}")


@dataclass(frozen=True)
class SelectionOptions(RetrievalKnobs):
    rerank_each_step: bool = False
    budget_tokens: Optional[int] = budget_field()  # drops retrieved (least similar first), then core


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


class GuidelineIndex:
    """Core set plus a retrieval pool with precomputed vectors; `select(query_vec)` ranks the pool exactly
    (numpy, BLAS threads chosen by timing) or, from `ann_threshold` guidelines on, through an IVF index.
    Similarities are rounded before ranking and thresholds (strategies.vector_search.stable_similarity): float
    noise between machines reorders only a pair that straddles a rounding step (docs/simulated-world.md). Equal
    ones keep the artifact's order, as ALTK-Evolve's select_guidelines (altk-evolve-core 1.7.1,
    llm/guidelines/retrieval.py: a stable `sorted(..., reverse=True)` on the similarity alone) keeps store
    order: guidelines of one source task tie exactly, and which of them top_k keeps is the store's first."""

    def __init__(self, core: Sequence[Guideline], pool: Sequence[Guideline], core_text: np.ndarray,
                 pool_text: np.ndarray, pool_source: np.ndarray, opts: RetrievalKnobs):
        """Vectors are L2-normalised rows: guideline texts (core, pool) and the pool's source-task texts."""
        self.opts = opts
        self.core = list(core)
        pool = list(pool)
        if pool and len(core_text):  # a pool guideline that restates a core one would only repeat it
            keep = np.concatenate([stable_similarity(pool_text[s:s + _CHUNK] @ core_text.T).max(axis=1)
                                   < opts.core_duplicate for s in range(0, len(pool), _CHUNK)])
            if not keep.all():
                pool = [g for g, k in zip(pool, keep) if k]
                pool_text, pool_source = pool_text[keep], pool_source[keep]
        self.pool = pool
        self.pool_text = np.ascontiguousarray(pool_text, dtype=np.float32)
        self.pool_source = np.ascontiguousarray(pool_source, dtype=np.float32)
        self.tie_rank = np.arange(len(pool))  # ties: the artifact's order (ALTK-Evolve's stable sort)
        use_ann = opts.ann_threshold is not None and len(pool) >= opts.ann_threshold and opts.top_k > 0
        self.ann = IvfIndex(self.pool_source, nprobe=opts.ann_nprobe, tie_rank=self.tie_rank) if use_ann else None
        if pool and not use_ann:
            blas_threads_for(self.pool_source)  # time it now, at start-up, not on the first task

    @classmethod
    def build(cls, guidelines: Sequence[Guideline], embedder: Embedder, opts: RetrievalKnobs) -> "GuidelineIndex":
        kept = [g for g in guidelines if g.support >= opts.min_support]
        core = sorted((g for g in kept if g.support >= opts.core_support), key=lambda g: (-g.support, g.id))
        pool = [g for g in kept if g.support < opts.core_support]
        texts = [g.text for g in core] + [g.text for g in pool] + [g.source_task_text or g.text for g in pool]
        vecs = embedder.embed(texts) if texts else np.zeros((0, 1), dtype=np.float32)
        n, m = len(core), len(pool)
        return cls(core, pool, vecs[:n], vecs[n:n + m], vecs[n + m:], opts)

    def select(self, query_vec: np.ndarray) -> list[Guideline]:
        """Core guidelines, then up to top_k retrieved ones in order of similarity."""
        return self._select(query_vec, exact=self.ann is None)

    def select_exact(self, query_vec: np.ndarray) -> list[Guideline]:
        """The same selection by the exact scan, whatever the pool size (the reference for recall)."""
        return self._select(query_vec, exact=True)

    def _select(self, query_vec: np.ndarray, exact: bool) -> list[Guideline]:
        k = self.opts.top_k
        if not self.pool or k == 0:
            return list(self.core)
        query = np.asarray(query_vec, dtype=np.float32).reshape(-1)
        chosen: list[int] = []
        for i in self._ranked_exact(query) if exact else self._ranked_ann(query):
            if chosen and stable_similarity(self.pool_text[chosen] @ self.pool_text[i]).max() >= \
                    self.opts.kept_duplicate:
                continue  # near-duplicate of one already kept
            chosen.append(i)
            if len(chosen) == k:
                break
        return list(self.core) + [self.pool[i] for i in chosen]

    def _ranked_exact(self, query: np.ndarray, skip: frozenset[int] = frozenset()) -> Iterator[int]:
        """Pool rows by decreasing (rounded) similarity to the query, ties in artifact order: the best few first,
        widened only when the duplicate skips used them up."""
        with blas_limit(blas_threads_for(self.pool_source)):
            sims = stable_similarity(self.pool_source @ query)
        seen = set(skip)
        width = min(len(sims), 4 * self.opts.top_k)
        while True:
            if width < len(sims):  # every row tied with the width-th best too, so a tie is never cut in two
                top = np.flatnonzero(sims >= np.partition(sims, len(sims) - width)[len(sims) - width])
            else:
                top = np.arange(len(sims))
            for i in top[rank_rows(sims[top], self.tie_rank[top])]:
                if int(i) not in seen:
                    seen.add(int(i))
                    yield int(i)
            if width == len(sims):
                return
            width = min(len(sims), width * 4)

    def _ranked_ann(self, query: np.ndarray) -> Iterator[int]:
        """The index's candidates (over-fetched 4x top_k, widened 4x at a time); once the probed lists run out,
        the rest by the exact scan, so the skips can never run short of candidates. Candidates tied with the last
        one found wait for a wider search: the index returns an arbitrary few of a tie it cuts, the ranking the
        first in artifact order."""
        assert self.ann is not None  # _select asks for it only when the index was built
        seen: set[int] = set()
        width = 4 * self.opts.top_k
        while True:
            found = self.ann.search(query, width)
            exhausted = len(found) < width or width >= len(self.pool)
            if not exhausted:
                sims = stable_similarity(self.pool_source[found] @ query)
                found = found[sims > sims[-1]]
            for i in found:
                if int(i) not in seen:
                    seen.add(int(i))
                    yield int(i)
            if exhausted:
                break
            width *= 4
        yield from self._ranked_exact(query, skip=frozenset(seen))


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
            from strategies.embeddings import make_embedder

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

