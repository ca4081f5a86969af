"""The managed local model server (model=local): lifecycle, a real τ² step through LiteLLM, token sums.

These start the real llama-cpp-python server with the bundled SmolLM2-135M GGUF that `make setup` installs.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import main_in_process, read_records

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from harness.serving import local_server
from harness.serving.local_server import BUNDLED, LocalServer
from harness.serving.faults import ContextOverflow
from harness.serving.model_client import ModelClient
from harness.run import compose_job

REPO = Path(__file__).resolve().parent.parent
SMALL_REPLIES = {"temperature": 0.0, "max_tokens": 24}  # keep decode short: the prefill is what we test


def alive(pid: int) -> bool:
    """True while the process exists and is not a zombie."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


def wait_gone(pid: int, timeout: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.1)
    return False


def first_retail_task():
    from tau2.run import load_tasks

    return load_tasks("retail", "test")[0]


def local_client(server: LocalServer) -> ModelClient:
    return ModelClient(server.litellm_model, {**SMALL_REPLIES, "api_base": server.api_base,
                                              "api_key": local_server.API_KEY}, max_retries=0)


def one_agent_step(server: LocalServer):
    """One real MemoryAgent step on a real retail task: policy + prompted tools + the task's opening."""
    from tau2.data_model.message import UserMessage
    from tau2.registry import registry

    from harness.benchmarks.tau2.agent import MemoryAgent, MalformedOutput
    from harness.ledger import Ledger

    env = registry.get_env_constructor("retail")()
    ledger = Ledger()
    client = local_client(server)
    agent = MemoryAgent(tools=env.get_tools(), domain_policy=env.get_policy(), llm=client.model, client=client,
                        ledger=ledger, prompted=True)
    state = agent.get_init_state()
    opening = UserMessage(role="user", content=first_retail_task().user_scenario.instructions.reason_for_call)
    try:
        agent.generate_next_message(opening, state)
    except MalformedOutput:
        pass  # a 135M model may well write a broken call; the step still went through the server
    return ledger


def test_server_serves_a_real_tau2_step_then_is_gone_even_when_the_task_raises(tmp_path):
    log = tmp_path / "server.log"
    with pytest.raises(RuntimeError, match="task blew up"):
        with LocalServer(BUNDLED, log_path=log) as server:
            pid = server.pid
            assert server.api_base.startswith("http://127.0.0.1:")
            ledger = one_agent_step(server)
            again = one_agent_step(server).agent_steps[0]  # the same prompt: its prefix comes from the server's cache
            step = ledger.agent_steps[0]
            assert step.prompt_tokens > 1500  # retail policy + 15 rendered tool schemas reached the model
            assert 0 < step.completion_tokens <= SMALL_REPLIES["max_tokens"]
            assert step.cached_tokens is None  # llama-cpp-python's server does not report them
            with pytest.raises(ContextOverflow):  # the server's 400 maps to context_overflow (a failure), not a crash
                local_client(server).complete([{"role": "user", "content": "tell me more " * 3000}])
            raise RuntimeError("task blew up")
    assert wait_gone(pid, timeout=1.0), "server still running after the with-block raised"
    # bench/cache.py's hit fractions come from this log: one entry per answered request, sizes as the usage says
    first, second = cache_bench().parse_server_log(log.read_text(errors="replace"))  # the 400 is not counted
    assert (first.prompt, first.reused) == (step.prompt_tokens, 0)
    assert second.prompt == again.prompt_tokens == step.prompt_tokens and 0.9 * second.prompt < second.reused < second.prompt


def cache_bench():
    spec = importlib.util.spec_from_file_location("bench_cache", REPO / "bench" / "cache.py")
    module = sys.modules["bench_cache"] = importlib.util.module_from_spec(spec)  # dataclasses look it up there
    spec.loader.exec_module(module)
    return module


_CHILD = """
import sys, time
from harness.serving.local_server import LocalServer, BUNDLED
server = LocalServer(BUNDLED).start()
print(server.pid, flush=True)
time.sleep(600)
"""


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL])
def test_no_orphan_server_when_the_harness_is_killed(sig):
    child = subprocess.Popen([sys.executable, "-c", _CHILD], cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        server_pid = int(child.stdout.readline())
        assert alive(server_pid)
        child.send_signal(sig)
        child.wait(timeout=120)  # generous: the point is that the server goes, not how fast on a busy machine
        assert wait_gone(server_pid), f"server {server_pid} outlived its harness after {sig.name}"
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


def test_local_is_the_default_model_and_names_the_served_file():
    default = compose_job([])
    mine = compose_job(["model.gguf=/models/Qwen2.5-7B-Instruct-Q4_K_M.gguf"])
    assert default.model.gguf == BUNDLED and default.model.tool_mode == "prompted"
    assert default.model.name == "openai/smollm2-135m-instruct.q4_1"
    assert mine.model.name == "openai/qwen2.5-7b-instruct-q4_k_m"


def test_bundled_gguf_matches_the_pinned_digest():
    assert local_server.verify_bundled().name == local_server.BUNDLED_FILE


def test_missing_gguf_is_a_config_error_before_anything_runs(tmp_path):
    proc = main_in_process("harness.run", f"runs_dir={tmp_path}", "model.gguf=/nope/x.gguf", "benchmark.limit=1",
                           "run_name=bad")
    assert proc.returncode == 2
    assert "GGUF model file not found: /nope/x.gguf" in proc.stderr
    assert not (tmp_path / "bad").exists()


def test_tiny_local_run_records_token_sums_of_its_trajectory(tmp_path):
    """Record totals = sums over the trajectory's messages' usage (agent and user simulator apart)."""
    started = []
    original = LocalServer.start

    def recording_start(self):
        result = original(self)
        started.append(self.pid)
        return result

    from harness.runner import run_job

    cfg = compose_job([
        "strategy=full", "memory=strategies/samples/tau2_sample.jsonl", "benchmark.limit=1",
        "benchmark.max_steps=4", f"runs_dir={tmp_path}", "run_name=tiny", "progress=false", "concurrency=1",
        "model.kwargs.max_tokens=24"])
    LocalServer.start = recording_start
    try:
        run_job(cfg)
    finally:
        LocalServer.start = original
    assert len(started) == 1 and wait_gone(started[0], timeout=1.0), "run_job left its server running"

    run = tmp_path / "tiny"
    (record,) = read_records(run)
    assert record["error"] != "infra", record["error_detail"]  # an overflow is "context_overflow", never infra
    sim = json.loads((run / record["trajectory"]).read_text())["simulations"][0]
    agent = [m["usage"] for m in sim["messages"] if m["role"] == "assistant" and m.get("usage")]
    user = [m["usage"] for m in sim["messages"] if m["role"] == "user" and m.get("usage")]
    assert agent and user and record["prompt_tokens"] > 0 and record["completion_tokens"] > 0
    assert record["prompt_tokens"] == sum(u["prompt_tokens"] for u in agent)
    assert record["completion_tokens"] == sum(u["completion_tokens"] for u in agent)
    assert record["user_prompt_tokens"] == sum(u["prompt_tokens"] for u in user)
    assert record["user_completion_tokens"] == sum(u["completion_tokens"] for u in user)
    assert record["cached_tokens"] is None
    notes = json.loads((run / "manifest.json").read_text()).get("notes", [])
    assert any("did not report cached prompt tokens" in n for n in notes)


def test_cache_bench_attributes_requests_to_agent_and_user_and_sets_the_cold_call_apart():
    bench = cache_bench()
    records = [{"step_usage": [{"prompt_tokens": 100}]}, {"step_usage": [{"prompt_tokens": 120}]}]  # two tasks
    requests = [bench.Request(0, 100), bench.Request(50, 60), bench.Request(110, 120)]  # agent, user, agent
    assert bench.hit_fraction(records, requests) == {"agent": (110, 220), "warm": (110, 120), "user": (50, 60)}
