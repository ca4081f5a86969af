"""Real sweeps through LiteLLM against a FAKE provider on 127.0.0.1 that injects faults by schedule.

Provider faults (429 with Retry-After, 500/503, a stall past the client timeout, a body that is not JSON,
an empty choice list) are retried with backoff; a request that fails max_retries + 1 times makes its
episode `infra`. The manifest's counts must equal what the server injected, every episode is recorded
once, the rest scores as the same sweep without faults, and a resume runs the infra episode again.
"""

from __future__ import annotations

import json
import threading
from collections import Counter

import pytest

from analysis import load_records, pass_hat_ks
from analysis.statistics.metrics import valid
from conftest import compose, read_records
from fault_server import FaultServer, scripts_for
from harness.runner import run_job

KEY = "fault-test-cred-0123456789"  # a local fake credential
TASKS = 4
MAX_RETRIES = 2
BACKOFF = 0.1
RETRY_AFTER = 1.0
TIMEOUT = 0.5
# Request by request, in arrival order (concurrency 1 makes it deterministic). Every fault run but the
# last is followed by a valid reply (recovered); the last is max_retries + 1 failures in a row (infra).
SCHEDULE = ["ok", "429", "ok", "500", "503", "ok", "stall", "ok", "malformed", "ok", "empty", "ok", "ok",
            "500", "500", "500"]
RECOVERED_RUNS = 5


def config(runs_dir, name, api_base):
    return compose("model=litellm", "model.name=openai/fault-agent", f"+model.kwargs.api_base={api_base}",
                   f"+model.kwargs.timeout={TIMEOUT}", "model.api_key_env=LLMCRED", f"model.max_retries={MAX_RETRIES}",
                   f"model.retry_backoff_s={BACKOFF}", f"benchmark.limit={TASKS}", "concurrency=1", "progress=false",
                   f"runs_dir={runs_dir}", f"run_name={name}")


@pytest.fixture
def cred(monkeypatch):
    monkeypatch.setenv("LLMCRED", KEY)


def test_injected_faults_are_retried_counted_and_resumed(runs_dir, cred):
    threads_before = set(threading.enumerate())
    scripts, scenarios = scripts_for(config(runs_dir, "x", "http://unused"))

    with FaultServer(scripts, scenarios) as clean:  # the same sweep without faults
        run_job(config(runs_dir, "clean", clean.api_base))
    with FaultServer(scripts, scenarios, schedule=SCHEDULE, retry_after=RETRY_AFTER) as server:
        summary = run_job(config(runs_dir, "faults", server.api_base))
        first_manifest = json.loads((runs_dir / "faults" / "manifest.json").read_text())
        log = list(server.log)
        injected = server.injected()
        assert not server.schedule  # every scheduled fault was served
        # resume (schedule used up: the provider is healthy again): the infra episode runs again
        again = run_job(config(runs_dir, "faults", server.api_base))
        assert server.injected() == injected

    n_injected = sum(injected.values())
    assert injected == {"429": 1, "500": 4, "503": 1, "stall": 1, "malformed": 1, "empty": 1}
    job = next(iter(first_manifest["jobs"].values()))
    infra = 1
    assert (job["retried"], job["recovered"], job["infra_errors"]) == (n_injected - infra, RECOVERED_RUNS, infra)
    assert (summary["retried"], summary["recovered"], summary["infra_errors"]) == (n_injected - infra,
                                                                                   RECOVERED_RUNS, infra)

    # Retry-After honoured (1 s, far above the 0.1 s backoff) and exponential backoff between the 500s
    at = [e["at"] for e in log]
    i429 = SCHEDULE.index("429")
    assert at[i429 + 1] - at[i429] >= RETRY_AFTER
    last = len(SCHEDULE) - 3
    gaps = [at[last + 1] - at[last], at[last + 2] - at[last + 1]]
    assert gaps[0] >= BACKOFF and gaps[1] >= 2 * BACKOFF and gaps[1] > gaps[0]

    records = read_records(runs_dir / "faults")[:TASKS]  # as the first run left them
    clean_records = read_records(runs_dir / "clean")
    assert Counter((r["task_id"], r["trial"]) for r in records) == Counter(
        (r["task_id"], r["trial"]) for r in clean_records)  # every episode exactly once
    bad = [r for r in records if r["error"] == "infra"]
    assert len(bad) == 1 and "InternalServerError after 3 attempts" in bad[0]["error_detail"]
    assert all(r["attempt"] == 1 for r in records)
    assert sum(r["provider_retries"] for r in records) == n_injected - infra
    good = {(r["task_id"], r["trial"]): r["success"] for r in records if r["error"] != "infra"}
    assert good == {(r["task_id"], r["trial"]): r["success"] for r in clean_records if (r["task_id"], r["trial"]) in good}
    assert any(good.values())  # the comparison is over real passes, not only failures
    rest = load_records([runs_dir / "clean"])
    rest = rest[rest.apply(lambda r: (r["task_id"], r["trial"]) in good, axis=1)]
    faulty = load_records([runs_dir / "faults"], dedupe=False).iloc[:TASKS]
    assert pass_hat_ks(valid(faulty, exclude=("infra",))) == pass_hat_ks(rest)  # the labelled --exclude infra view
    # the default (tau2-bench leaderboard convention): the infra episode is a failed trial of its task
    failed = load_records([runs_dir / "clean"])
    lost = (failed["task_id"] == bad[0]["task_id"]) & (failed["trial"] == bad[0]["trial"])
    assert pass_hat_ks(valid(faulty)) == pass_hat_ks(failed.assign(success=failed["success"] & ~lost))
    print(f"\nfault injection: injected={n_injected} retried={job['retried']} recovered={job['recovered']} "
          f"infra={job['infra_errors']} lost=0")

    # the resume above: the infra episode ran again (attempt 2) and the loader keeps the latest attempt
    assert again["ran"] == 1 and again["infra_rerun"] == 1
    records = read_records(runs_dir / "faults")
    assert len(records) == TASKS + 1 and records[-1]["attempt"] == 2 and records[-1]["error"] is None
    warnings: list[str] = []
    loaded = load_records([runs_dir / "faults"], warn=warnings.append)
    assert len(loaded) == TASKS and (loaded["error"] != "infra").all()
    assert loaded.attrs["dropped"] == {"superseded": 1, "duplicates": 0}
    manifest = json.loads((runs_dir / "faults" / "manifest.json").read_text())
    job = next(iter(manifest["jobs"].values()))  # totals over both launches: the retries stay counted
    assert (job["superseded"], job["infra_errors"], job["retried"], job["recovered"]) == (
        1, 0, n_injected - infra, RECOVERED_RUNS)

    leftover = [t for t in threading.enumerate() if t not in threads_before and t.is_alive()
                and t.name.startswith("fault-server")]
    assert not leftover
