"""Nearest-neighbour helpers for core_retrieval: an IVF index (faiss) for large pools, and the BLAS thread count
for the exact scan, chosen by timing both options on this machine instead of assuming one.

Why IVF (faiss `IndexIVFScalarQuantizer`, exact re-scoring) and not a graph index: on the 2-core development
machine an IVF index over 1,000,000 vectors of 384 dims builds in about 2-3 minutes, while HNSW (faiss or usearch)
took 55-180 s for 100,000 already (faiss HNSW M 16: ~10 min estimated at 1M) and, on the benchmark's clustered
vectors with near-duplicates, found fewer of the exact top 10 (docs/retrieval.md). hnswlib has no wheels.
"""

from __future__ import annotations

import math
import statistics
import threading
import time
from contextlib import AbstractContextManager, nullcontext
from typing import Any, Callable, Sequence, TypeVar

import numpy as np

T = TypeVar("T")

# Cosine similarities are ranked and compared with thresholds after rounding to this many decimals, ties broken
# by a fixed order (the guideline's id): the same texts embedded on another machine (other BLAS kernels, thread
# counts, batch shapes) differ in the 7th decimal or beyond (docs/simulated-world.md), so that noise can reorder
# only a pair that straddles a rounding step, not every near-tie. Six decimals is far finer than any difference
# that separates two guidelines' relevance.
SIMILARITY_DECIMALS = 6


def stable_similarity(sims: np.ndarray) -> np.ndarray:
    """Similarities rounded to SIMILARITY_DECIMALS (float64), the values every ranking and threshold uses."""
    return np.round(np.asarray(sims, dtype=np.float64), SIMILARITY_DECIMALS)


def rank_rows(sims: np.ndarray, tie_rank: np.ndarray) -> np.ndarray:
    """Positions of `sims` by decreasing rounded similarity; equal ones by increasing `tie_rank`."""
    return np.lexsort((np.asarray(tie_rank), -stable_similarity(sims)))


def id_rank(ids: Sequence[str]) -> np.ndarray:
    """Each row's place when the rows are sorted by id (equal ids: by row): the tie-break order."""
    order = sorted(range(len(ids)), key=lambda i: (str(ids[i]), i))
    rank = np.empty(len(ids), dtype=np.int64)
    rank[order] = np.arange(len(ids))
    return rank


class IvfIndex:
    """Inner-product (= cosine on unit rows) IVF index over `vectors`; search returns row numbers, best first.

    nlist ~ 2 sqrt(n) lists, trained by k-means (10 iterations, fixed seed) on at most 40 vectors per list;
    a query scans the `nprobe` lists whose centroids are closest. The lists hold 8-bit scalar-quantised copies
    (a quarter of the float32 memory, ~40% less scan time); the candidates found are re-scored exactly with
    `vectors`, which the index keeps a reference to (not a copy).

    A search runs on `search_threads` OpenMP threads (1; None: faiss' default, all cores). One query is too
    little work to share: faiss' threads only added a CPU tail (up to 6.5 ms for a 0.4 ms search at 1M) and, on
    a busy machine, a wait for a second core (docs/retrieval.md). The setting is per calling thread and
    restored after the search, so the build (k-means, adding) keeps all cores.
    """

    def __init__(self, vectors: np.ndarray, nprobe: int = 16, seed: int = 0, search_threads: int | None = 1,
                 tie_rank: np.ndarray | None = None):
        """`tie_rank`: the order equal (rounded) similarities are returned in; default: by row number."""
        import faiss

        self._vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        n, dim = self._vectors.shape
        nlist = max(1, min(round(2 * math.sqrt(n)), n // 40))
        self._quantizer = faiss.IndexFlatIP(dim)  # the index refers to it: keep it alive
        index = faiss.IndexIVFScalarQuantizer(self._quantizer, dim, nlist, faiss.ScalarQuantizer.QT_8bit,
                                              faiss.METRIC_INNER_PRODUCT)
        index.cp.niter = 10
        index.cp.seed = seed
        rng = np.random.default_rng(seed)
        sample = self._vectors if n <= 40 * nlist else self._vectors[np.sort(rng.choice(n, 40 * nlist, replace=False))]
        index.train(sample)
        index.add(self._vectors)
        index.nprobe = min(nprobe, nlist)
        self._index = index
        self.size, self.nlist, self.nprobe = n, nlist, index.nprobe
        self.search_threads = search_threads
        self._tie_rank = np.arange(n) if tie_rank is None else np.asarray(tie_rank)

    def search(self, query: np.ndarray, k: int) -> np.ndarray:
        """Up to k row numbers by decreasing exact similarity (rounded: stable_similarity), ties by `tie_rank`
        (as the exact scan breaks them); fewer when the probed lists hold fewer."""
        import faiss

        query = np.ascontiguousarray(query, dtype=np.float32).reshape(-1)
        before = None
        if self.search_threads is not None:
            before = faiss.omp_get_max_threads()  # OpenMP's setting is per thread: this thread's, restored below
            faiss.omp_set_num_threads(self.search_threads)
        try:
            _, ids = self._index.search(query.reshape(1, -1), min(k, self.size))
        finally:
            if before is not None:
                faiss.omp_set_num_threads(before)
        ids = ids[0][ids[0] >= 0]
        return ids[rank_rows(self._vectors[ids] @ query, self._tie_rank[ids])]


def faster_option(options: Sequence[T], run_once: Callable[[T], float], repeats: int = 5) -> T:
    """The option with the lowest median of `repeats` timings (run interleaved, so load changes hit all alike)."""
    samples: dict[int, list[float]] = {i: [] for i in range(len(options))}
    for _ in range(repeats):
        for i, option in enumerate(options):
            samples[i].append(run_once(option))
    return options[min(samples, key=lambda i: statistics.median(samples[i]))]


_controller: Any = None
_choices: dict[tuple[int, ...], int | None] = {}
_choice_lock = threading.Lock()


def _blas() -> Any:
    global _controller
    if _controller is None:
        from threadpoolctl import ThreadpoolController

        _controller = ThreadpoolController()
    return _controller


def blas_limit(threads: int | None) -> AbstractContextManager:
    """Run a block on `threads` BLAS threads; None leaves BLAS' own count."""
    return nullcontext() if threads is None else _blas().limit(limits=threads, user_api="blas")


def blas_default_threads() -> int:
    return max((lib.num_threads for lib in _blas().select(user_api="blas").lib_controllers), default=1)


def blas_threads_for(matrix: np.ndarray) -> int | None:
    """1 or None (all of BLAS' threads), whichever multiplies `matrix` by a vector faster on this machine now.

    Timed once per matrix shape per process and cached: threads pay off on an idle machine and cost 10-20x
    on a busy 2-core one (bench/retrieval.py), so neither is assumed.
    """
    key = tuple(matrix.shape)
    with _choice_lock:
        if key in _choices:
            return _choices[key]
        choice: int | None = None
        if blas_default_threads() > 1 and matrix.size:
            query = np.full(matrix.shape[1], 1 / math.sqrt(matrix.shape[1]), dtype=matrix.dtype)

            def run_once(threads: int | None) -> float:
                start = time.perf_counter()
                with blas_limit(threads):
                    matrix @ query
                return time.perf_counter() - start

            run_once(1), run_once(None)  # warm caches and thread pools before timing
            choice = faster_option((1, None), run_once)
        _choices[key] = choice
        return choice
