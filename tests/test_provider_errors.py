"""Error labels: malformed output is an agent error; provider errors are retried, then recorded as infra errors;
a context overflow, a request the provider refuses, an unusable user-simulator reply and a crashing strategy are
failures in the denominator; a bad key stops the job."""

from __future__ import annotations

import itertools
import json
import threading

import litellm
import pytest
from litellm import CustomLLM, ModelResponse

from conftest import compose, read_records
from harness.runner import run_job
from harness.serving.providers import register_provider, unregister_provider
from harness.scripted.oracle import ScriptedOracle, install

PROVIDER = "memdeliv-test"


class FaultyProvider(CustomLLM):
    """FAKE provider for tests: misbehaves per model name, otherwise answers like the scripted oracle."""

    def __init__(self):
        super().__init__()
        self.calls = itertools.count()
        self.lock = threading.Lock()
        self.oracle = ScriptedOracle()

    def completion(self, model, messages, *args, **kwargs):
        with self.lock:
            n = next(self.calls)
        if model == "always-500":
            raise litellm.InternalServerError(message="upstream exploded", model=model, llm_provider=PROVIDER)
        if model == "flaky" and n % 2 == 0:  # every other call is rate limited: the retry must absorb it
            raise litellm.RateLimitError(message="slow down", model=model, llm_provider=PROVIDER)
        if model == "filtered":
            raise litellm.ContentPolicyViolationError(message="blocked by the content filter", model=model,
                                                      llm_provider=PROVIDER)
        if model == "bad-key":
            raise litellm.AuthenticationError(message="invalid api key", llm_provider=PROVIDER, model=model)
        if model == "overflow":
            raise litellm.ContextWindowExceededError(message="prompt is 9000 tokens, window 8192", model=model,
                                                     llm_provider=PROVIDER)
        if model == "user-empty":  # as a user simulator: a reply with neither text nor a tool call
            return ModelResponse(model=model, usage={"prompt_tokens": 7, "completion_tokens": 0, "total_tokens": 7},
                                 choices=[{"message": {"role": "assistant", "content": ""}}])
        if model == "malformed":
            return ModelResponse(model=model, usage={"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
                                 choices=[{"message": {"role": "assistant", "content": None, "tool_calls": [{
                                     "id": "c1", "type": "function",
                                     "function": {"name": "get_user_details", "arguments": '{"user_id": '}}]}}])
        return self.oracle.completion(model, messages, *args, **kwargs)


@pytest.fixture(scope="module", autouse=True)
def faulty_provider():
    install()
    handler = register_provider(PROVIDER, FaultyProvider())
    yield handler
    unregister_provider(PROVIDER)


def run_with(model: str, runs_dir, name: str, user: str = "memdeliv-scripted/oracle", *extra: str):
    agent = model if "/" in model else f"{PROVIDER}/{model}"
    cfg = compose("model=oracle", f"model.name={agent}", f"model.user_name={user}",
                  "model.max_retries=2", "model.retry_backoff_s=0", "benchmark.limit=2", "progress=false",
                  f"runs_dir={runs_dir}", f"run_name={name}", "concurrency=1", *extra)
    summary = run_job(cfg)
    recorded = (runs_dir / name / "results.jsonl").exists()  # a job stopped before its first row wrote none
    return summary, read_records(runs_dir / name) if recorded else []


def test_malformed_tool_call_is_an_agent_error_kept_in_the_trajectory(runs_dir):
    summary, records = run_with("malformed", runs_dir, "malformed")
    assert len(records) == 2 and summary["infra_errors"] == 0
    for r in records:
        assert r["error"] == "agent" and r["success"] is False and r["reward"] == 0.0
        assert "arguments are not JSON" in r["error_detail"]
        assert r["steps"] == 1 and r["prompt_tokens"] == 10  # the failed call was still paid for and ledgered
        saved = json.loads((runs_dir / "malformed" / r["trajectory"]).read_text())
        last = saved["simulations"][0]["messages"][-1]
        assert last["content"].startswith("[unparseable model output]")


def test_rate_limits_are_retried_and_the_task_succeeds(runs_dir):
    _, records = run_with("flaky", runs_dir, "flaky")
    assert [r["error"] for r in records] == [None, None]
    assert all(r["success"] for r in records)


def test_persistent_500_is_an_infra_error_and_the_run_goes_on(runs_dir, faulty_provider):
    before = next(faulty_provider.calls)
    summary, records = run_with("always-500", runs_dir, "down")
    calls = next(faulty_provider.calls) - before - 1
    assert len(records) == 2 and summary["infra_errors"] == 2
    for r in records:
        assert r["error"] == "infra" and "InternalServerError after 3 attempts" in r["error_detail"]
    assert calls == 2 * 3  # each task: 1 try + 2 retries, then given up


def test_context_overflow_is_a_failure_in_the_denominator(runs_dir):
    from analysis import load_records
    from analysis import summarize

    summary, records = run_with("overflow", runs_dir, "overflow")
    assert summary["infra_errors"] == 0 and summary["errors"] == {"context_overflow": 2}
    for r in records:
        assert r["error"] == "context_overflow" and r["success"] is False
        assert "context window exceeded" in r["error_detail"]
    row = summarize(load_records([runs_dir / "overflow"]), n_boot=50).iloc[0]
    assert row["records"] == 2 and row["success"] == 0.0 and row["err_context_overflow"] == 2
    manifest = json.loads((runs_dir / "overflow" / "manifest.json").read_text())
    assert next(iter(manifest["jobs"].values()))["errors"] == {"context_overflow": 2}


def test_content_filter_is_a_counted_rejection_never_retried(runs_dir, faulty_provider):
    before = next(faulty_provider.calls)
    summary, records = run_with("filtered", runs_dir, "filtered")
    calls = next(faulty_provider.calls) - before - 1
    assert summary["infra_errors"] == 0 and summary["errors"] == {"request_rejected": 2}
    assert all(r["success"] is False and "content filter" in r["error_detail"] for r in records)
    assert calls == 2  # one call per task: a refused request is not retried


def test_bad_key_stops_the_job_and_records_nothing(runs_dir, faulty_provider):
    before = next(faulty_provider.calls)
    summary, records = run_with("bad-key", runs_dir, "bad-key")
    assert summary["stopped"]["reason"] == "provider_unusable" and "refused the credentials" in \
        summary["stopped"]["detail"] and summary["ran"] == 0 and records == []
    assert next(faulty_provider.calls) - before - 1 == 1  # the second task never called the provider


def test_empty_user_simulator_reply_is_a_user_simulator_failure(runs_dir):
    summary, records = run_with("memdeliv-scripted/oracle", runs_dir, "user-empty", f"{PROVIDER}/user-empty")
    assert summary["infra_errors"] == 0
    assert [(r["error"], r["success"]) for r in records] == [("user_simulator", False)] * 2
    assert records[0]["error_detail"].startswith("user simulator") and "empty" in records[0]["error_detail"]


def test_user_simulator_provider_down_is_still_infra(runs_dir):
    summary, records = run_with("memdeliv-scripted/oracle", runs_dir, "user-down", f"{PROVIDER}/always-500")
    assert summary["infra_errors"] == 2 and {r["error"] for r in records} == {"infra"}


def test_tau2_user_error_termination_maps_to_user_simulator():
    from tau2.data_model.simulation import TerminationReason

    from harness.benchmarks.tau2.results import ERROR_OF as _ERROR_OF

    assert _ERROR_OF[TerminationReason.USER_ERROR] == "user_simulator"
