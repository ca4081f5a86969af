"""core_retrieval at memory scale: the IVF index against the exact scan, the size threshold, the BLAS choice."""

from __future__ import annotations

import numpy as np
import pytest

import strategies
from strategies import Guideline
from memory_kit import vector_search
from memory_kit.selection import GuidelineIndex, SelectionOptions
from memory_kit.vector_search import faster_option


def unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def clustered(rng, n: int, dim: int, clusters: int) -> np.ndarray:
    centers = unit(rng.standard_normal((clusters, dim)))
    return unit(centers[rng.integers(0, clusters, n)] + 0.8 / np.sqrt(dim) * rng.standard_normal((n, dim)))


def make_index(n: int, seed: int = 7, dim: int = 32, twins: float = 0.2, **options) -> tuple[GuidelineIndex, np.ndarray]:
    """n pool guidelines in clusters, a share of them near-duplicates (same source task, near-same text) of the
    one before; two unrelated core guidelines; 40 queries from the same clusters."""
    rng = np.random.default_rng(seed)
    both = clustered(rng, n + 40, dim, clusters=max(1, n // 50))
    source, queries = both[:n], both[n:]
    text = unit(source + 0.6 / np.sqrt(dim) * rng.standard_normal((n, dim)))
    for i in np.flatnonzero(rng.random(n) < twins)[1:]:
        source[i] = source[i - 1]
        text[i] = unit((text[i - 1] + 0.05 / np.sqrt(dim) * rng.standard_normal(dim))[None])[0]
    pool = [Guideline(id=f"g{i}", text=f"g{i}") for i in range(n)]
    core = [Guideline(id=f"c{i}", text=f"c{i}", support=3) for i in range(2)]
    opts = SelectionOptions(**{"top_k": 10, **options})
    return GuidelineIndex(core, pool, unit(rng.standard_normal((2, dim))), text, source, opts), queries


def test_index_selection_matches_the_exact_scan_with_the_same_duplicate_skips():
    index, queries = make_index(3000, ann_threshold=100)
    assert index.ann is not None and index.ann.nlist > 1 and index.ann.nprobe < index.ann.nlist  # really partial
    overlap = []
    for q in queries:
        got, want = index.select(q), index.select_exact(q)
        assert got[:2] == want[:2] == index.core  # core first, untouched
        assert len(got) == len(want) == 12
        rows = [int(g.id[1:]) for g in got[2:]]
        sims = index.pool_text[rows] @ index.pool_text[rows].T
        assert (sims[np.triu_indices(len(rows), 1)] < index.opts.kept_duplicate).all()  # skips still applied
        overlap.append(len({g.id for g in got} & {g.id for g in want}) - 2)
    assert sum(overlap) / (10 * len(queries)) >= 0.95  # recall@10 of the index against the exact selection
    assert overlap.count(10) >= 0.8 * len(queries)


def test_skips_that_exhaust_the_probed_lists_fall_back_to_the_exact_ranking():
    # nearly every guideline is a twin of the one before: one probed list cannot supply 10 distinct ones
    index, queries = make_index(600, seed=3, twins=0.9, ann_threshold=100, ann_nprobe=1)
    beyond = 0
    for q in queries:
        rows = [int(g.id[1:]) for g in index.select(q)[2:]]
        assert len(rows) == 10
        sims = index.pool_text[rows] @ index.pool_text[rows].T
        assert (sims[np.triu_indices(10, 1)] < index.opts.kept_duplicate).all()
        probed = set(index.ann.search(q, len(index.pool)).tolist())
        beyond += any(r not in probed for r in rows)
    assert beyond > 0  # some selections needed rows outside the probed lists: the exact fallback supplied them


def test_threshold_switches_between_exact_and_index():
    assert make_index(99, ann_threshold=100)[0].ann is None
    assert make_index(100, ann_threshold=100)[0].ann is not None
    assert make_index(5000, ann_threshold=None)[0].ann is None  # null: always exact
    assert make_index(200, ann_threshold=100, top_k=0)[0].ann is None  # nothing to retrieve
    with pytest.raises(ValueError, match="ann_threshold"):
        strategies.validate_options("core_retrieval", {"ann_threshold": 0})
    with pytest.raises(ValueError, match="ann_nprobe"):
        strategies.validate_options("core_retrieval", {"ann_nprobe": 0})


def test_faster_option_takes_the_lower_median_of_interleaved_timings():
    def timer(table):
        runs = {k: iter(v) for k, v in table.items()}
        order = []

        def run_once(option):
            order.append(option)
            return next(runs[option])
        return run_once, order

    run_once, order = timer({1: [5.0, 5.1, 4.9], None: [1.0, 9.0, 1.2]})  # one slow outlier for threads
    assert faster_option((1, None), run_once, repeats=3) is None
    assert order == [1, None, 1, None, 1, None]  # interleaved, so a load change hits both alike
    run_once, _ = timer({1: [0.5, 0.6, 0.4], None: [2.0, 2.1, 1.9]})
    assert faster_option((1, None), run_once, repeats=3) == 1


def test_blas_choice_is_timed_once_per_shape_and_used(monkeypatch):
    calls = []

    def pick_one(options, run_once, repeats=5):
        calls.append(options)
        return 1

    monkeypatch.setattr(vector_search, "faster_option", pick_one)
    monkeypatch.setattr(vector_search, "blas_default_threads", lambda: 4)
    monkeypatch.setattr(vector_search, "_choices", {})
    matrix = np.ones((123, 7), dtype=np.float32)
    assert vector_search.blas_threads_for(matrix) == 1
    assert vector_search.blas_threads_for(matrix.copy()) == 1
    assert calls == [(1, None)]  # cached after the first timing
    monkeypatch.setattr(vector_search, "blas_default_threads", lambda: 1)
    assert vector_search.blas_threads_for(np.ones((5, 7), dtype=np.float32)) is None  # nothing to choose
    assert len(calls) == 1


def test_search_runs_on_one_openmp_thread_with_the_same_selection_and_recall(monkeypatch):
    import faiss

    index, queries = make_index(3000, ann_threshold=100)
    assert index.ann.search_threads == 1  # the default: one query is too little work to share
    real, calls, original = faiss.omp_set_num_threads, [], faiss.omp_get_max_threads()
    monkeypatch.setattr(faiss, "omp_set_num_threads", lambda n: (calls.append(n), real(n)))
    real(2)  # this thread's setting, other than 1 so that restoring it shows
    try:
        one_thread = [index.select(q) for q in queries]
        assert calls[:2] == [1, 2] and faiss.omp_get_max_threads() == 2  # set for the search, then restored
        index.ann.search_threads = None  # faiss' default threads (the old setting): the same index and answers
        calls.clear()
        assert [index.select(q) for q in queries] == one_thread and 1 not in calls
    finally:
        real(original)
    recall = np.mean([len({g.id for g in a[2:]} & {g.id for g in index.select_exact(q)[2:]}) / 10
                      for a, q in zip(one_thread, queries)])
    assert recall >= 0.95
