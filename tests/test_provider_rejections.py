"""Provider errors from a FAKE OpenAI-compatible server on 127.0.0.1, through LiteLLM, to record labels.

A 400 that says the request does not fit (in Anthropic's, vLLM's, Gemini's, Bedrock's or llama.cpp's words)
is `context_overflow`; a content filter or another refused request is `request_rejected`; both stay in the
denominator. 429 and 500 are retried, then `infra`. A bad key or an unknown model stops the job with exit 2 at
the first call, writes nothing for the episodes not run, and a rerun resumes.
"""

from __future__ import annotations

import json

import litellm
import pytest

from analysis import load_records, summarize
from conftest import compose, read_records, run_cli, run_in_process
from fault_server import BODIES_400, FaultServer, scripts_for
from harness.serving import provider_errors
from harness.runner import run_job

KEY_VAR, KEY = "LLMCRED", "fault-test-cred-0123456789"  # a local fake credential
EXPECTED = {kind: "context_overflow" if "overflow" in kind else "request_rejected" for kind in BODIES_400}


def overrides(api_base: str, tasks: int) -> list[str]:
    return ["model=litellm", "model.name=openai/fault-agent", f"+model.kwargs.api_base={api_base}",
            "+model.kwargs.timeout=5", f"model.api_key_env={KEY_VAR}", "model.max_retries=2",
            "model.retry_backoff_s=0.05", f"benchmark.limit={tasks}", "concurrency=1", "progress=false"]


@pytest.fixture
def cred(monkeypatch):
    monkeypatch.setenv(KEY_VAR, KEY)


@pytest.fixture(scope="module")
def scripts():
    return scripts_for(compose(*overrides("http://unused", len(BODIES_400))))


@pytest.mark.parametrize("kind", list(BODIES_400))
def test_each_provider_phrasing_is_read_without_litellm_help(kind):
    """A plain BadRequestError carrying the body: the harness's own reading, whatever LiteLLM maps itself."""
    exc = litellm.BadRequestError(message=json.dumps(BODIES_400[kind]), model="m", llm_provider="openai")
    want = provider_errors.OVERFLOW if EXPECTED[kind] == "context_overflow" else provider_errors.REJECTED
    assert provider_errors.kind_of(exc) == want


def test_status_kinds_of_unmapped_api_errors():
    kinds = {status: provider_errors.kind_of(litellm.APIError(status, "x", "openai", "m"))
             for status in (400, 401, 403, 404, 413, 422, 429, 500, 503)}
    assert kinds == {400: "rejected", 401: "stop", 403: "infra", 404: "stop", 413: "overflow", 422: "rejected",
                     429: "retry", 500: "retry", 503: "retry"}
    assert provider_errors.kind_of(ValueError("not a provider error")) is None
    no_key = litellm.InternalServerError("OpenAIException - Missing credentials. Pass an `api_key`", "m", "openai")
    no_route = litellm.BadRequestError("LLM Provider NOT provided. You passed model=nope", "nope", None)
    assert provider_errors.kind_of(no_key) == provider_errors.kind_of(no_route) == "stop"


def test_400s_are_labelled_overflow_or_rejected_and_counted(runs_dir, cred, scripts):
    kinds = list(BODIES_400)
    # concurrency 1: each episode's first request is the simulated user's, its second the agent's, which fails
    schedule = [k for kind in kinds for k in ("ok", kind)]
    with FaultServer(*scripts, schedule=schedule) as server:
        summary = run_job(compose(*overrides(server.api_base, len(kinds)), f"runs_dir={runs_dir}", "run_name=r400"))
        log = list(server.log)
    assert [e["role"] for e in log if e["kind"] != "ok"] == ["agent"] * len(kinds)
    records = read_records(runs_dir / "r400")
    assert [r["error"] for r in records] == [EXPECTED[k] for k in kinds]
    assert all(r["success"] is False for r in records)
    assert summary["infra_errors"] == 0 and summary["errors"] == {
        "context_overflow": sum(v == "context_overflow" for v in EXPECTED.values()),
        "request_rejected": sum(v == "request_rejected" for v in EXPECTED.values())}
    assert len(log) == 2 * len(kinds)  # a rejected request is never retried
    content_filter = records[kinds.index("400filter")]
    assert "content management policy" in content_filter["error_detail"]
    row = summarize(load_records([runs_dir / "r400"]), n_boot=20).iloc[0]
    assert row["records"] == len(kinds) and row["success"] == 0.0  # in the denominator, as failures
    assert row["err_request_rejected"] == 2


@pytest.mark.parametrize("kind, error_name", [("429", "RateLimitError"), ("500", "InternalServerError")])
def test_429_and_500_are_still_retried_then_infra(runs_dir, cred, scripts, kind, error_name):
    with FaultServer(*scripts, schedule=[kind] * 3, retry_after=0.05) as server:
        summary = run_job(compose(*overrides(server.api_base, 1), f"runs_dir={runs_dir}", "run_name=down"))
        served = server.injected()
    assert served == {kind: 3}  # 1 try + max_retries 2
    [record] = read_records(runs_dir / "down")
    assert record["error"] == "infra" and f"{error_name} after 3 attempts" in record["error_detail"]
    assert summary["infra_errors"] == 1


def test_bad_key_stops_the_job_with_exit_2_and_a_rerun_resumes(runs_dir, cred, scripts):
    with FaultServer(*scripts) as server:
        cli = [*overrides(server.api_base, 1), "run_name=key"]
        first = run_in_process(*cli, runs_dir=runs_dir)  # one task recorded with a good key
        assert first.returncode == 0, first.stderr[-2000:]
        server.default = "401"
        cli = [*overrides(server.api_base, 3), "run_name=key"]
        stopped = run_cli(*cli, runs_dir=runs_dir)  # its own process: the key must reach none of its output
        refused = server.injected().get("401", 0)
        server.default = "ok"
        again = run_in_process(*cli, runs_dir=runs_dir)
    assert stopped.returncode == 2, stopped.stderr[-2000:]
    lines = [line for line in stopped.stderr.splitlines() if line.startswith("memdeliv: stopped")]
    assert len(lines) == 1 and "refused the credentials" in lines[0] and "run_name=key" in lines[0]
    assert "Traceback" not in stopped.stderr and KEY not in stopped.stderr
    assert refused == 1  # stopped at the first refused call: no retries, no other episode tried
    assert [r["error"] for r in read_records(runs_dir / "key")[:1]] == [None]
    assert again.returncode == 0, again.stderr[-2000:]
    records = read_records(runs_dir / "key")
    assert len(records) == 3 and all(r["error"] != "infra" for r in records)  # nothing recorded for the stop
    assert "ran 2, resumed past 1" in again.stdout + again.stderr


def test_unknown_model_stops_the_job_with_exit_2(runs_dir, cred, scripts):
    with FaultServer(*scripts) as server:
        server.default = "404"
        proc = run_in_process(*overrides(server.api_base, 3), "run_name=nomodel", runs_dir=runs_dir)
        refused = server.injected()
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "does not know this model" in proc.stderr and refused == {"404": 1}
    results = runs_dir / "nomodel" / "results.jsonl"
    assert not results.exists() or not results.read_text().strip()
