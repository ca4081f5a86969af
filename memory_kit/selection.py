"""ALTK-Evolve's core + retrieval selection, shared by `core_retrieval` (delivered in the prompt) and `on_demand`
(recalled by the agent's memory tool): the options of the selection and the index over a memory artifact that
ranks the retrieval pool by source-task similarity and skips near-duplicates (docs/retrieval.md)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Optional, Sequence

import numpy as np

from memory_kit.vector_search import IvfIndex, blas_limit, blas_threads_for, rank_rows, stable_similarity
from strategies import Embedder, Guideline, option
from strategies.options import budget_field

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
    embedder: str = "minilm"  # see memory_kit.embeddings.make_embedder
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


class GuidelineIndex:
    """Core set plus a retrieval pool with precomputed vectors; `select(query_vec)` ranks the pool exactly
    (numpy, BLAS threads chosen by timing) or, from `ann_threshold` guidelines on, through an IVF index.
    Similarities are rounded before ranking and thresholds (memory_kit.vector_search.stable_similarity): float
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
