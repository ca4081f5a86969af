"""tau2's evaluator in a process pool while episodes overlap (harness/benchmarks/tau2/eval_pool.py): the same
RewardInfo as in the episode's thread, no pool for one episode at a time, and a broken pool loses nothing.
SCRIPTED oracle episodes (no language model)."""

from __future__ import annotations

from concurrent.futures.process import BrokenProcessPool

import pytest
from conftest import read_records
from tau2.data_model.simulation import Results
from tau2.evaluator.evaluator import EvaluationType

from harness.benchmarks.tau2 import eval_pool
from harness.benchmarks.tau2.data import TaskSource
from harness.run import compose_job
from harness.runner import run_job
from harness.serving.models import serve_scripted


@pytest.fixture(autouse=True)
def fresh_pool(monkeypatch):
    """Each test starts with no pool in this process and shuts down the one it started."""
    monkeypatch.setattr(eval_pool, "_pool", None)
    monkeypatch.setattr(eval_pool, "_broken", False)
    yield
    if eval_pool._pool is not None:
        eval_pool._pool.shutdown(wait=True)


@pytest.fixture()
def stored_episode(tmp_path):
    """One oracle episode run at concurrency 1: its simulation, task and record."""
    serve_scripted(compose_job(["model=oracle"]).model.name)
    run_job(compose_job(["model=oracle", "progress=false", f"runs_dir={tmp_path}", "run_name=one",
                         "benchmark.limit=1"]))
    assert eval_pool._pool is None  # one episode at a time: no pool was started
    record = read_records(tmp_path / "one")[0]
    results = Results.load(tmp_path / "one" / record["trajectory"])
    return results.simulations[0], results.tasks[0], record


def test_the_pool_gives_the_thread_s_reward_info(stored_episode):
    simulation, task, record = stored_episode
    source = TaskSource("retail")
    in_thread = eval_pool.evaluate(simulation, task, EvaluationType.ALL, source)
    assert in_thread.reward == record["reward"] == 1.0
    with eval_pool.episode(), eval_pool.episode():  # two episodes in flight: the pool starts and is used
        pool = eval_pool._pool
        assert pool is not None
        submitted = []
        real_submit = pool.submit
        pool.submit = lambda *a: submitted.append(a[0].__name__) or real_submit(*a)
        try:
            pooled = eval_pool.evaluate(simulation, task, EvaluationType.ALL, source)
        finally:
            del pool.submit
    assert submitted == ["_evaluate_json"] and pooled.model_dump() == in_thread.model_dump()


def test_a_broken_pool_evaluates_in_the_thread(stored_episode, monkeypatch):
    simulation, task, _ = stored_episode

    class Broken:
        def submit(self, *args):
            raise BrokenProcessPool("a worker died")

        def shutdown(self, **kwargs):
            pass

    monkeypatch.setattr(eval_pool, "_pool", Broken())
    with eval_pool.episode(), eval_pool.episode():
        reward = eval_pool.evaluate(simulation, task, EvaluationType.ALL, TaskSource("retail"))
    assert reward.reward == 1.0 and eval_pool._pool is None and eval_pool._broken  # no other pool is started


def test_a_worker_error_is_decided_by_the_thread_and_keeps_the_pool(stored_episode, monkeypatch):
    simulation, task, _ = stored_episode

    class Failing:
        def submit(self, *args):
            raise RuntimeError("the worker could not bootstrap")

        def shutdown(self, **kwargs):
            pass

    failing = Failing()
    monkeypatch.setattr(eval_pool, "_pool", failing)
    monkeypatch.setattr(eval_pool, "enabled", True)
    with eval_pool.episode(), eval_pool.episode():
        reward = eval_pool.evaluate(simulation, task, EvaluationType.ALL, TaskSource("retail"))
    assert reward.reward == 1.0 and eval_pool._pool is failing and not eval_pool._broken


@pytest.mark.parametrize(("spec", "has_file", "safe"), [("harness.run", True, True), (None, True, False),
                                                       (None, False, True)])
def test_the_pool_is_used_only_where_a_spawned_worker_may_import_main(monkeypatch, spec, has_file, safe):
    """`python -m harness.run` and pytest guard their main; a plain script may not (each worker would run it
    again); an interactive session has no main file."""
    import sys
    import types

    main = types.ModuleType("__main__")
    main.__spec__ = types.SimpleNamespace(name=spec) if spec else None
    if has_file:
        main.__file__ = "/somewhere/script.py"
    monkeypatch.setitem(sys.modules, "__main__", main)
    monkeypatch.setattr(eval_pool, "enabled", None)
    started = []
    monkeypatch.setattr(eval_pool, "_start_pool", lambda: started.append(True))
    with eval_pool.episode(), eval_pool.episode():
        pass
    assert eval_pool.main_is_importable() is safe and bool(started) is safe
    monkeypatch.setattr(eval_pool, "enabled", True)  # a guarded script (bench/scale.py) opts in
    with eval_pool.episode(), eval_pool.episode():
        pass
    assert started


def test_a_pool_that_cannot_start_leaves_the_episode_to_its_thread(stored_episode, monkeypatch):
    """Seen under joblib's workers: a spawned child died at start-up and the warm-up submit raised inside the
    episode. Now the pool is given up and the episode evaluates in its thread."""
    simulation, task, _ = stored_episode

    class DiesAtStart:
        def __init__(self, *args, **kwargs):
            pass

        def submit(self, *args):
            raise BrokenProcessPool("A child process terminated abruptly")

        def shutdown(self, **kwargs):
            pass

    monkeypatch.setattr(eval_pool, "ProcessPoolExecutor", DiesAtStart)
    monkeypatch.setattr(eval_pool, "enabled", True)
    with eval_pool.episode(), eval_pool.episode():
        reward = eval_pool.evaluate(simulation, task, EvaluationType.ALL, TaskSource("retail"))
    assert reward.reward == 1.0 and eval_pool._pool is None and eval_pool._broken
