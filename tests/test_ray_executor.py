"""executor=ray against a real local Ray (127.0.0.1, 2 CPUs), started once for this module and stopped after it."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections import Counter
from dataclasses import replace

import pytest

from conftest import HUNG_S, SAMPLE_MEMORY, compose, read_records, run_in_process

ray = pytest.importorskip("ray")
psutil = pytest.importorskip("psutil")

from harness.runner import executors, ray_executor  # noqa: E402
from harness.config import ExecutorConfig  # noqa: E402
from harness.runner import run_job  # noqa: E402

SAME = ("task_id", "trial", "seed", "success", "reward", "error", "steps", "prompt_tokens", "cached_tokens",
        "completion_tokens", "memory_tokens", "user_prompt_tokens", "user_completion_tokens", "delivered")


def _ray_processes() -> list:
    found = []
    for proc in psutil.Process().children(recursive=True):
        try:
            line = " ".join(proc.cmdline())
        except psutil.Error:
            continue
        if line.startswith("ray::") or "/site-packages/ray/" in line:
            found.append(proc)
    return found


@pytest.fixture(scope="module")
def local_ray():
    ray_executor.ray_up(ExecutorConfig(name="ray", num_cpus=2))
    try:
        yield
    finally:
        ray_executor.ray_down()
        deadline = time.time() + 30
        while _ray_processes() and time.time() < deadline:
            time.sleep(0.5)
        left = [(p.pid, p.name()) for p in _ray_processes()]
        assert not left, f"Ray processes left behind: {left}"


def _job(runs_dir, name, *overrides):
    return compose("model=oracle", "progress=false", f"runs_dir={runs_dir}", f"run_name={name}", *overrides)


def _key(record):
    return record["task_id"], record["trial"]


def test_local_ray_listens_on_loopback_only(local_ray):
    listening = []
    for proc in _ray_processes():
        try:
            listening += [c.laddr.ip for c in proc.net_connections(kind="inet") if c.status == psutil.CONN_LISTEN]
        except psutil.Error:
            continue
    assert listening, "no listening Ray sockets found: the check would prove nothing"
    assert set(listening) <= {"127.0.0.1", "::ffff:127.0.0.1", "::1"}, set(listening)


def test_ray_sweep_gives_the_records_of_threads(local_ray, runs_dir):
    same = ("strategy=full", f"memory={SAMPLE_MEMORY}", "benchmark.limit=2", "benchmark.trials=2")
    threads = run_job(_job(runs_dir, "threads", *same))
    on_ray = run_job(_job(runs_dir, "ray", *same, "executor=ray", "executor.num_cpus=2"))
    assert threads["executor"] == "threads" and on_ray["executor"] == "ray"
    a, b = read_records(runs_dir / "threads"), read_records(runs_dir / "ray")
    assert len(a) == len(b) == 4 and len({_key(r) for r in b}) == 4
    assert {_key(r): [r.get(f) for f in SAME] for r in a} == {_key(r): [r.get(f) for f in SAME] for r in b}
    assert all(r["success"] and r["memory_tokens"] > 0 for r in b)  # memory really delivered in the workers
    for record in b:  # the driver wrote every worker's trajectory where the record says, and nothing else
        doc = json.loads((runs_dir / "ray" / record["trajectory"]).read_text())
        assert doc["simulations"][0]["task_id"] == record["task_id"]
    files = sorted(p.name for p in (runs_dir / "ray" / "trajectories").rglob("*") if p.is_file())
    assert files == sorted(os.path.basename(r["trajectory"]) for r in b)
    assert not (runs_dir / "ray" / "memory").exists()  # workers never write the run directory


def _kill_workers_running(wanted: dict[str, int], timeout: float = HUNG_S) -> None:
    """SIGKILL the worker process running episode `ray::episode:<task>:t0`, `wanted[task]` times (each kill
    hits a new process: Ray's rerun of the episode runs in a fresh worker)."""
    killed: dict[str, list[int]] = {task: [] for task in wanted}
    deadline = time.time() + timeout
    while any(len(killed[t]) < n for t, n in wanted.items()):
        assert time.time() < deadline, f"workers not found in time; killed so far: {killed}"
        for proc in _ray_processes():
            for task, n in wanted.items():
                try:
                    running = proc.cmdline()[:1] == [f"ray::episode:{task}:t0"]
                except psutil.Error:
                    continue
                if running and proc.pid not in killed[task] and len(killed[task]) < n:
                    os.kill(proc.pid, signal.SIGKILL)
                    killed[task].append(proc.pid)
        time.sleep(0.05)


def test_killed_worker_is_retried_once_then_infra(local_ray, runs_dir):
    # a 0.5 s model latency keeps each episode running for seconds, long enough to find and kill its worker
    cfg = _job(runs_dir, "kill", "executor=ray", "executor.num_cpus=2", "benchmark.limit=3",
               "+model.kwargs.metadata.latency_s=0.5")
    from harness.benchmarks import create

    twice, once, untouched = [t.id for t in create(cfg.benchmark).tasks()]
    summary: dict = {}
    runner = threading.Thread(target=lambda: summary.update(run_job(cfg)))
    runner.start()
    _kill_workers_running({twice: 2, once: 1})  # `twice`: its rerun dies too; `once`: its rerun succeeds
    runner.join(timeout=HUNG_S)
    assert not runner.is_alive()

    records = read_records(runs_dir / "kill")
    assert Counter(_key(r) for r in records) == {(twice, 0): 1, (once, 0): 1, (untouched, 0): 1}  # none lost or doubled
    by_task = {r["task_id"]: r for r in records}
    assert by_task[twice]["error"] == "infra" and "ray worker died" in by_task[twice]["error_detail"]
    assert by_task[twice]["trajectory"] is None
    assert by_task[once]["success"] and by_task[once]["error"] is None
    assert by_task[untouched]["success"] and by_task[untouched]["error"] is None
    assert summary["infra_errors"] == 1 and summary["ran"] == 3
    files = [p for p in (runs_dir / "kill" / "trajectories").rglob("*") if p.is_file()]
    assert sorted(p.name for p in files) == sorted([f"{once}__t0.json", f"{untouched}__t0.json"])


def test_a_worker_that_cannot_build_the_job_stops_it(local_ray, runs_dir, monkeypatch):
    # The local Ray started before this variable existed, so its workers lack it: a node without the API key.
    monkeypatch.setenv("MEMDELIV_TEST_ONLY_ON_DRIVER", "x")
    cfg = _job(runs_dir, "nokey", "executor=ray", "executor.num_cpus=2", "benchmark.limit=2",
               "model.api_key_env=MEMDELIV_TEST_ONLY_ON_DRIVER")
    with pytest.raises(ray_executor.WorkerSetupError, match="MEMDELIV_TEST_ONLY_ON_DRIVER"):
        run_job(cfg)
    results = runs_dir / "nokey" / "results.jsonl"
    assert not results.exists() or not results.read_text().strip()  # nothing recorded as if it had run


def test_a_bad_key_seen_in_a_worker_stops_the_job(local_ray, runs_dir):
    from fault_server import FaultServer, scripts_for

    with FaultServer(*scripts_for(compose("model=oracle", "benchmark.limit=2"))) as server:
        server.default = "401"
        cfg = compose("model=litellm", "model.name=openai/fault-agent", f"+model.kwargs.api_base={server.api_base}",
                      "+model.kwargs.api_key=fault-test-cred", "executor=ray", "executor.num_cpus=2",
                      "benchmark.limit=2", "progress=false", f"runs_dir={runs_dir}", "run_name=badkey")
        summary = run_job(cfg)
        assert summary["stopped"]["reason"] == "provider_unusable" and "refused the credentials" in \
            summary["stopped"]["detail"] and summary["ran"] == 0
        assert set(server.injected()) == {"401"}
    results = runs_dir / "badkey" / "results.jsonl"
    assert not results.exists() or not results.read_text().strip()  # no episode recorded as a failure


def test_online_streams_run_as_ray_tasks_and_match_a_serial_run(local_ray, artifact, runs_dir):
    import stream_roles
    from harness.run import compose_job

    stream_roles.install()
    serial = run_job(compose_job(stream_roles.job(artifact, runs_dir, "serial", "concurrency=1")))
    on_ray = run_job(compose_job(stream_roles.job(artifact, runs_dir, "ray", "executor=ray", "executor.num_cpus=2")))
    assert serial["executor"] == "streams" and on_ray["executor"] == "ray streams" and on_ray["ran"] == 12
    # the workers delivered each stream's playbook as the driver had it, and the driver learned the same updates
    assert stream_roles.comparable_records(runs_dir / "ray") == stream_roles.comparable_records(runs_dir / "serial")
    assert stream_roles.playbooks(runs_dir / "ray") == stream_roles.playbooks(runs_dir / "serial")


def test_every_learners_streams_run_in_ray_workers_and_match_threads(local_ray, artifact, runs_dir, capsys):
    # its stream travels as data (harness/runner/stream_state.py); retrieval synthesis's curator runs in the worker's
    # deliver and its cheatsheet comes back to the driver
    import stream_roles
    from harness.run import compose_job

    learners = {"dc": ["strategy=dynamic_cheatsheet"], "rs": ["strategy=dynamic_cheatsheet",
                                                             "strategy.options.variant=retrieval_synthesis"],
                "awm": ["strategy=awm_online"], "rb": ["strategy=reasoning_bank"]}
    for name, strategy in learners.items():
        base = ["model=simulated", f"model.world={artifact}", "benchmark=tau2_retail", "benchmark.limit=3",
                "benchmark.trials=2", "progress=false", f"runs_dir={runs_dir}", *strategy]
        threads = run_job(compose_job([*base, f"run_name={name}-threads", "concurrency=2"]))
        on_ray = run_job(compose_job([*base, f"run_name={name}-ray", "executor=ray", "executor.num_cpus=2"]))
        assert threads["executor"] == "streams" and on_ray["executor"] == "ray streams" and on_ray["ran"] == 6
        ray_rows = stream_roles.comparable_records(runs_dir / f"{name}-ray")
        assert ray_rows == stream_roles.comparable_records(runs_dir / f"{name}-threads"), name
        assert len({json.dumps(r["step_usage"][-1]["memory_tokens"]) for r in ray_rows.values()}) > 1, name
    assert "cannot be sent to a Ray worker" not in capsys.readouterr().err


PRICE = ["model.price_per_mtok_in=100", "model.price_per_mtok_out=400"]  # USD per 1M tokens: visible sums


def test_a_budget_on_ray_stops_within_one_wave_and_a_higher_one_resumes(local_ray, runs_dir, capsys):
    from fault_server import FaultServer, scripts_for
    from harness.runner.budget import episode_cost

    tasks, slots = 8, 2  # executor.num_cpus=2, one CPU per episode: a wave is 2 episodes

    def cfg(name, *extra):
        return compose("model=litellm", "model.name=openai/fault-agent", f"+model.kwargs.api_base={server.api_base}",
                       "+model.kwargs.api_key=budget-ray-cred", "model.max_retries=0", *PRICE,
                       f"benchmark.limit={tasks}", "executor=ray", "executor.num_cpus=2", "progress=false",
                       f"runs_dir={runs_dir}", f"run_name={name}", *extra)

    with FaultServer(*scripts_for(compose("model=oracle", f"benchmark.limit={tasks}"))) as server:
        run_job(cfg("free"))
        costs = [episode_cost(r) for r in read_records(runs_dir / "free")]
        assert len(costs) == tasks and all(c and c > 0 for c in costs)
        budget = 3.5 * sum(costs) / len(costs)
        first = run_job(cfg("capped", f"budget_usd={budget}"))
        capped = read_records(runs_dir / "capped")
        spent = sum(episode_cost(r) for r in capped)
        assert first["executor"] == "ray" and 0 < len(capped) < tasks and first["ran"] == len(capped)
        assert spent <= budget + slots * max(costs)  # past the cap by at most the wave in flight
        assert f"stopped at budget: ${spent:.4f} of ${budget:.2f}, {len(capped)} of {tasks} episodes" \
            in capsys.readouterr().err
        job = next(iter(json.loads((runs_dir / "capped" / "manifest.json").read_text())["jobs"].values()))
        assert job["budget"]["stopped"] is True and job["budget"]["episodes_done"] == len(capped)
        again = run_job(cfg("capped", f"budget_usd={100 * budget}"))
    assert again["ran"] == tasks - len(capped) and again["skipped"] == len(capped)
    records = read_records(runs_dir / "capped")
    assert Counter(_key(r) for r in records) == Counter(_key(r) for r in read_records(runs_dir / "free"))
    job = next(iter(json.loads((runs_dir / "capped" / "manifest.json").read_text())["jobs"].values()))
    assert job["budget"]["stopped"] is False and job["budget"]["episodes_done"] == tasks


def test_an_online_learner_with_one_stream_stays_on_the_driver(capsys):
    from harness.runner import resolve
    from strategies import StrategyBase

    job = resolve(compose("model=oracle", "strategy=ace_online", "executor=ray"))
    one_stream = replace(job, capabilities=replace(job.capabilities, trial_streams=False))  # as its class declares
    assert executors.create(one_stream, StrategyBase(), served={}).name == "in order"
    assert "learns online in one stream" in capsys.readouterr().err
    offline = replace(job, capabilities=replace(job.capabilities, learns_online=False))
    assert executors.create(offline, StrategyBase(), served={}).name == "ray"


@pytest.mark.parametrize("override, expected", [
    ("executor.bogus=1", "bogus"),                                     # unknown key
    ("executor=dask", "ray"),                                          # unknown choice names the valid ones
    ("executor=ray executor.num_cpus=two", "num_cpus"),                 # wrong type
    ("executor=ray executor.address=somewhere", "ray://host:port"),     # bad value
    ("executor.address=auto", "executor=ray only"),                    # a Ray option on threads
])
def test_bad_executor_option_exits_2_before_anything_is_written(override, expected, runs_dir):
    proc = run_in_process("model=oracle", "strategy=none,full", *override.split(), "run_name=bad", runs_dir=runs_dir,
                          multirun=True)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert expected in proc.stderr and "Traceback" not in proc.stderr
    assert not runs_dir.exists()
