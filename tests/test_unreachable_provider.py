"""A provider that cannot be reached stops the job: when the first episodes of a launch (harness/runner/reach.py:
FIRST = 3) all end in connection errors after their retries, the job exits 2 naming the endpoint (never the key),
keeps what it recorded, and a rerun resumes once the endpoint answers."""

from __future__ import annotations

import socket

import httpx
import litellm
import pytest

from conftest import compose, read_records, run_cli
from fault_server import FaultServer, scripts_for
from harness.records import Outcome
from harness.row import Row
from harness.runner import run_job
from harness.runner.reach import FIRST, Reachability
from harness.serving.provider_errors import unreachable_endpoint

KEY = "sk-unreachable-test-0123456789abcdef"
TASKS = 5


def closed_port() -> int:
    with socket.socket() as sock:  # bound, then closed: nothing listens there
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def overrides(port: int, name: str) -> list[str]:
    return ["model=litellm", "model.name=openai/x", f"+model.kwargs.api_base=http://127.0.0.1:{port}/v1",
            "model.api_key_env=UNREACH_KEY", "model.max_retries=1", "model.retry_backoff_s=0",
            f"benchmark.limit={TASKS}", "concurrency=1", f"run_name={name}"]


def test_a_closed_port_stops_the_job_and_a_rerun_resumes_when_it_answers(runs_dir, monkeypatch):
    port = closed_port()
    # a process of its own (run_cli): the key must reach none of its output, loggers made at import included
    proc = run_cli(*overrides(port, "down"), runs_dir=runs_dir, env={"UNREACH_KEY": KEY})
    assert proc.returncode == 2, proc.stderr[-3000:]
    endpoint = f"http://127.0.0.1:{port}/v1/chat/completions"
    assert f"cannot reach {endpoint}" in proc.stderr and f"each of the first {FIRST} episodes ended in connection errors" in proc.stderr
    assert "run_name=down to resume" in proc.stderr and "Traceback" not in proc.stderr
    assert KEY not in proc.stderr + proc.stdout
    records = read_records(runs_dir / "down")  # recorded before the stop, as infra: nothing lost
    assert len(records) == FIRST and {r["error"] for r in records} == {"infra"}
    assert all(f"cannot reach {endpoint}" in r["error_detail"] and r["provider_gave_up"] for r in records)

    monkeypatch.setenv("UNREACH_KEY", KEY)
    cfg = compose(*overrides(port, "down"), f"runs_dir={runs_dir}", "progress=false")
    with FaultServer(*scripts_for(cfg), port=port):  # the endpoint answers now
        summary = run_job(cfg)
    assert summary["ran"] == TASKS and summary["infra_rerun"] == FIRST and summary["infra_errors"] == 0
    latest = {r["task_id"]: r for r in read_records(runs_dir / "down")}  # the last row of each task counts
    assert len(latest) == TASKS and all(r["success"] for r in latest.values())


def test_a_provider_that_answers_with_errors_is_not_stopped_as_unreachable(runs_dir, monkeypatch):
    """Every episode infra after its retries, but the provider was reached (500s): recorded, never stopped."""
    monkeypatch.setenv("UNREACH_KEY", KEY)
    port = closed_port()
    cfg = compose(*overrides(port, "errors"), f"runs_dir={runs_dir}", "progress=false")
    with FaultServer(*scripts_for(cfg), port=port) as server:
        server.default = "500"
        summary = run_job(cfg)
    assert summary["ran"] == TASKS and summary["infra_errors"] == TASKS


def _row(error=None):
    return Row.of(({"task_id": "t", "trial": 0, "success": error is None, "error": error}, "benchmark_extra"))


def test_reachability_stops_only_when_every_first_episode_failed_to_connect():
    down = Outcome(row=_row("infra"), unreachable="http://127.0.0.1:9/v1/chat/completions")
    reach = Reachability(episodes=10, model="openai/x", retries=1)
    assert [reach.see(down) for _ in range(FIRST - 1)] == [None] * (FIRST - 1)
    reason = reach.see(down)
    assert "openai/x: cannot reach http://127.0.0.1:9/v1/chat/completions" in reason and "tried 2 times" in reason
    mixed = Reachability(episodes=10, model="openai/x", retries=1)
    assert mixed.see(Outcome(row=_row("infra"))) is None  # infra of another kind (a 500): reachable
    assert all(mixed.see(down) is None for _ in range(2 * FIRST))
    single = Reachability(episodes=1, model="openai/x", retries=0)  # a job of one episode decides on that one
    assert single.see(down) is not None


def _raised(exc: BaseException, cause: BaseException) -> BaseException:
    try:
        try:
            raise cause
        except BaseException as inner:
            raise exc from inner
    except BaseException as outer:
        return outer


@pytest.mark.parametrize("cause, expected", [
    (httpx.ConnectError("[Errno 111] Connection refused",
                        request=httpx.Request("POST", "http://u:p@10.0.0.1:8000/v1/chat/completions?key=sk-x")),
     "http://10.0.0.1:8000/v1/chat/completions"),  # no user:password, no query: a key can travel in either
    (httpx.ConnectTimeout("timed out", request=httpx.Request("POST", "https://api.example.com/v1/chat/completions")),
     "https://api.example.com/v1/chat/completions"),
    (socket.gaierror(-2, "Name or service not known"), "http://proxy.invalid/v1"),  # no URL: the api_base
    (httpx.ReadTimeout("read timed out", request=httpx.Request("POST", "http://10.0.0.1/v1")), None),  # reached it
    (ValueError("upstream trouble"), None),
])
def test_unreachable_endpoint_reads_the_cause_chain(cause, expected):
    exc = _raised(litellm.InternalServerError(message="Connection error.", model="x", llm_provider="openai"), cause)
    assert unreachable_endpoint(exc, api_base="http://proxy.invalid/v1") == expected
