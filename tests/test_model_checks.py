"""Every model of a job (agent, user simulator, judge) is checked before anything is written: a model string
LiteLLM cannot route, or a hosted model whose key is not in the environment, exits 2 with one clear line."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys

import pytest

from conftest import HUNG_S, REPO, compose, unwrapped
from harness.serving.credentials import ModelCheckError, check_models, model_configs
from tau2_fakes import make_data_dir

# the CLI runs as a process of its own, in an environment with no key at all
NO_KEYS = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}


def make_sweep(*variables: str, runs_dir) -> subprocess.CompletedProcess:
    """The harness command `make sweep <variables>` runs (read with make -n), run into runs_dir with no keys."""
    plan = subprocess.run(["make", "-n", "sweep", *variables, "RUN=check"], cwd=REPO, capture_output=True,
                          text=True, check=True).stdout
    [line] = [line for line in plan.splitlines() if "-m harness.run" in line]
    cmd = [*shlex.split(line), f"runs_dir={runs_dir}", "progress=false"]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=HUNG_S, env=NO_KEYS)
    proc.stderr = unwrapped(proc.stderr)
    return proc


def test_make_sweep_with_a_hosted_model_and_no_key_exits_2_before_writing(runs_dir):
    proc = make_sweep("MODEL=openai/gpt-4.1", runs_dir=runs_dir)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "model.name=openai/gpt-4.1: no API key: set OPENAI_API_KEY" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and not runs_dir.exists()


def test_make_sweep_with_a_model_litellm_cannot_route_exits_2_naming_the_choices(runs_dir):
    proc = make_sweep("MODEL=nope", runs_dir=runs_dir)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "model.name='nope': LiteLLM cannot route" in proc.stderr
    assert ", ".join(model_configs()) in proc.stderr and "`provider/model`" in proc.stderr
    assert {"litellm", "local", "oracle", "simulated"} <= set(model_configs())
    assert len(proc.stderr.strip().splitlines()) == 1 and not runs_dir.exists()


def nl_graded(tasks: list[dict]) -> list[dict]:
    """Task 1 graded by an NL assertion too: this task set calls the judge."""
    for t in tasks:
        if t["id"] == "1":
            t["evaluation_criteria"]["reward_basis"] = ["DB", "NL_ASSERTION"]
            t["evaluation_criteria"]["nl_assertions"] = ["The agent told the user the exchange was done."]
    return tasks


def harness_run(*overrides: str, runs_dir) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness.run", *overrides, f"runs_dir={runs_dir}", "progress=false",
                           "run_name=bad"], cwd=REPO, capture_output=True, text=True, timeout=HUNG_S, env=NO_KEYS)


def test_user_simulator_key_is_checked(runs_dir):
    proc = harness_run("model=oracle", "model.user_name=anthropic/claude-sonnet-4-5", runs_dir=runs_dir)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "model.user_name=anthropic/claude-sonnet-4-5: no API key: set ANTHROPIC_API_KEY" in proc.stderr
    assert not runs_dir.exists()


def test_judge_key_is_checked_when_a_task_needs_the_judge(tmp_path, runs_dir):
    judge = "benchmark.judge_model=openai/gpt-4.1-2025-04-14"
    data = make_data_dir(tmp_path / "data", "retail", nl_graded, split={"test": ["1", "5"]})
    proc = harness_run("model=oracle", judge, f"benchmark.data_dir={data}", runs_dir=runs_dir)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "benchmark.judge_model=openai/gpt-4.1-2025-04-14: no API key: set OPENAI_API_KEY" in proc.stderr
    assert not runs_dir.exists()
    # the packaged tasks have no NL assertion: the judge is never called, so its key is not required
    cfg = compose("model=oracle", judge)
    check_models(cfg, judge_used=False)
    with pytest.raises(ModelCheckError, match="judge_model"):
        check_models(cfg, judge_used=True)


def test_a_key_in_the_environment_or_named_by_api_key_env_passes(monkeypatch):
    for key in [k for k in os.environ if k.endswith("_API_KEY")]:
        monkeypatch.delenv(key)
    cfg = compose("model=litellm", "model.name=openai/gpt-4.1")
    with pytest.raises(ModelCheckError, match="OPENAI_API_KEY"):
        check_models(cfg)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local-test")
    check_models(cfg)
    monkeypatch.delenv("OPENAI_API_KEY")
    check_models(compose("model=litellm", "model.name=openai/gpt-4.1", "model.api_key_env=MY_KEY_VAR"))
    check_models(compose("model=oracle"))  # scripted models need no key
    check_models(compose("model=litellm", "model.name=hosted_vllm/my-model"))  # a provider that needs none


@pytest.mark.parametrize("args, key, expected", [
    ("memory=null", "memory", None),  # beats the Makefile's memory=$(MEMORY)
    ("concurrency=3", "concurrency", 3),
    ("benchmark.limit=2", "limit", 2),  # beats LIMIT's default
])
def test_a_key_given_in_args_wins_over_the_makefiles_default(args, key, expected):
    """ARGS= is read after every default the Makefile sets (Hydra keeps the later of two overrides of a key)."""
    plan = subprocess.run(["make", "-n", "-o", "setup", "sweep", "MODEL=simulated", "STRATEGIES=none",
                           "CONCURRENCY=2", f"ARGS={args}", "RUN=check"], cwd=REPO, capture_output=True, text=True,
                          check=True).stdout
    [line] = [line for line in plan.splitlines() if "-m harness.run" in line]
    overrides = shlex.split(line)[4:]  # after `.venv/bin/python -m harness.run -m`
    settings = compose(*overrides)
    value = settings.benchmark.limit if key == "limit" else getattr(settings, key)
    assert value == expected, line
