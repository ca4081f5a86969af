"""tau2's evaluator in a small process pool while several episodes run at once.

tau2's `evaluate_simulation` replays an episode's actions on fresh environments: ~0.6 s of pure-Python CPU per
retail episode, under the GIL of the process that runs the job. With the threads executor and concurrency 8 the
episodes' threads queue behind each other's evaluations (concurrency 8 vs 1 at 1 s model latency: 5.1x, not
8x). So while more than one episode of this process is in flight, an evaluation is sent to a pool of
min(4, CPUs) worker processes (started once per process, on first need; `spawn`, as forking a threaded process
is unsafe) and the episode's thread waits without holding the GIL. One episode at a time (concurrency 1, a
Ray worker) evaluates in its own thread as before: nothing to overlap, no process to start.

The worker runs the same tau2 function on the same simulation and task (sent as JSON, as tau2 stores them)
and returns the RewardInfo as JSON. Tasks graded by NL assertions stay in the episode's thread: their judge
is a model call ledgered into the episode (judge.py). A pool that cannot start or breaks (a worker killed) is
dropped and the evaluation runs in the thread, as does one whose worker raised (the thread's own evaluation then
decides, exactly as without the pool): an episode is never lost or labelled by the pool.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from functools import cache
from pathlib import Path

from tau2.data_model.simulation import RewardInfo, SimulationRun
from tau2.data_model.tasks import Task
from tau2.evaluator.evaluator import EvaluationType, evaluate_simulation

from harness.benchmarks.tau2.data import TaskSource

log = logging.getLogger("memdeliv.tau2")
MAX_WORKERS = 4

_lock = threading.Lock()
_in_flight = 0
_pool: ProcessPoolExecutor | None = None
_broken = False  # a pool broke once in this process: no other is started
# True / False: the pool is / is never used (bench/scale.py measures both). None: used when workers can be
# spawned safely (main_is_importable).
enabled: bool | None = None


def main_is_importable() -> bool:
    """A `spawn` worker imports the parent's main module. That is harmless for `python -m ...` (harness.run,
    pytest: they guard their main) and for an interactive session (no file), but a plain script without an
    `if __name__ == "__main__"` guard would be run again in every worker: it evaluates in its threads."""
    main = sys.modules.get("__main__")
    return main is None or getattr(main, "__spec__", None) is not None or not hasattr(main, "__file__")


def _use_pool() -> bool:
    return main_is_importable() if enabled is None else enabled


@contextmanager
def episode() -> Iterator[None]:
    """Around one episode: counts the episodes in flight; the second one starts the pool (while both wait on
    their model calls, so its start-up is off the critical path)."""
    global _in_flight
    with _lock:
        _in_flight += 1
        if _in_flight > 1 and _use_pool():
            _start_pool()
    try:
        yield
    finally:
        with _lock:
            _in_flight -= 1


def evaluate(simulation: SimulationRun, task: Task, evaluation_type: EvaluationType, source: TaskSource) -> RewardInfo:
    """tau2's `evaluate_simulation(solo_mode=False)` on `source`'s environments, in the pool when other episodes
    are in flight."""
    with _lock:
        pool = _pool if _in_flight > 1 and evaluation_type != EvaluationType.ALL_WITH_NL_ASSERTIONS \
            and _use_pool() else None
    if pool is not None:
        try:
            reply = pool.submit(_evaluate_json, simulation.model_dump_json(), task.model_dump_json(),
                                evaluation_type.value, source.domain, str(source.data_dir) if source.data_dir else None)
            return RewardInfo.model_validate_json(reply.result())
        except BrokenProcessPool:
            _drop_pool(pool)
        except Exception as error:  # noqa: BLE001 -- whatever failed in the worker, the thread's result stands
            log.warning("tau2 evaluation in the pool failed (%s); evaluating in the episode's thread", error)
    return evaluate_simulation(simulation=simulation, task=task, solo_mode=False, evaluation_type=evaluation_type,
                               domain=source.evaluator_domain)


def _evaluate_json(simulation: str, task: str, evaluation_type: str, domain: str, data_dir: str | None) -> str:
    """In a worker: the evaluation of one episode, JSON in and out."""
    reward = evaluate_simulation(simulation=SimulationRun.model_validate_json(simulation),
                                 task=Task.model_validate_json(task), solo_mode=False,
                                 evaluation_type=EvaluationType(evaluation_type),
                                 domain=_source(domain, data_dir).evaluator_domain)
    return reward.model_dump_json()


@cache
def _source(domain: str, data_dir: str | None) -> TaskSource:
    """In a worker: the task set, its data dir's environment registered once (data.py)."""
    return TaskSource(domain, Path(data_dir) if data_dir else None)


def _start_pool() -> None:
    """Called under _lock. A pool whose workers cannot start (a child that dies while spawning, e.g. inside
    another library's worker process) is given up for this process: the episodes evaluate in their threads."""
    global _pool, _broken
    if _pool is None and not _broken:
        workers = max(1, min(MAX_WORKERS, os.cpu_count() or 1))
        pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"))
        try:
            for _ in range(workers):  # the workers import tau2 now, not during the first evaluations
                pool.submit(_warm)
        except Exception as error:  # noqa: BLE001 -- BrokenProcessPool, or the spawn itself failing
            log.warning("tau2 evaluation pool did not start (%s); evaluating in the episodes' threads", error)
            _broken = True
            pool.shutdown(wait=False, cancel_futures=True)
            return
        _pool = pool


def _warm() -> None:
    import tau2.evaluator.evaluator  # noqa: F401


def _drop_pool(pool: ProcessPoolExecutor) -> None:
    global _pool, _broken
    log.warning("tau2 evaluation pool broke; evaluating in the episode's thread from now on")
    with _lock:
        _broken = True
        if _pool is pool:
            _pool = None
    pool.shutdown(wait=False, cancel_futures=True)
