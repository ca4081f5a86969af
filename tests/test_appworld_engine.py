"""AppWorld through the REAL engine worker and AppWorld's own `world.evaluate()`, on a SYNTHETIC root.

The root (tests/appworld_synthetic_root.py: empty-schema app DBs, API-doc rows, toy tasks with known
answers, nothing from AppWorld's licensed data) is built once and cached under .cache/ (git-ignored),
keyed by the builder's source and the AppWorld lock.
"""

from __future__ import annotations

import hashlib
from dataclasses import replace
import json
import os
import re
import shutil
import signal
import subprocess
from collections import defaultdict
from pathlib import Path

import pytest
from harness.settings import FrozenMap

from analysis import load_records
from analysis.statistics import metrics
from conftest import HUNG_S, REPO, compose, read_records, run_in_process
from harness.benchmarks.appworld import pool as appworld_pool
from harness.benchmarks.appworld.adapter import VENV_PYTHON, AppWorldBenchmark
from harness.serving.model_client import Completion, ModelClient, Usage
from harness.runner import run_job

BUILDER = REPO / "tests" / "appworld_synthetic_root.py"
TRAIN = {"a1b2c3d_1": 1, "a1b2c3d_2": 1, "a1b2c3d_3": 1, "b2c3d4e_1": 2, "b2c3d4e_2": 2}  # id -> difficulty


@pytest.fixture(scope="session")
def synthetic() -> dict[str, Path]:
    if not VENV_PYTHON.exists():
        pytest.fail("AppWorld's engine venv is missing: run `make setup`")
    key = hashlib.sha256(BUILDER.read_bytes() + (REPO / "requirements-appworld.lock").read_bytes()).hexdigest()[:12]
    home = REPO / ".cache" / "appworld-synthetic" / key
    if not (home / "root" / "data" / "datasets" / "train.txt").exists():
        tmp = home.with_name(key + ".building")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        proc = subprocess.run([str(VENV_PYTHON), str(BUILDER), str(tmp / "root"), str(tmp / "data.bundle")],
                              capture_output=True, text=True, timeout=HUNG_S,
                              env={**os.environ, "APPWORLD_CACHE": str(REPO / ".cache" / "appworld")})
        assert proc.returncode == 0, proc.stderr[-3000:]
        shutil.rmtree(home, ignore_errors=True)
        tmp.rename(home)
    return {"root": home / "root", "bundle": home / "data.bundle"}


@pytest.fixture
def appworld_root(synthetic, monkeypatch):
    monkeypatch.setenv("APPWORLD_ROOT", str(synthetic["root"]))
    monkeypatch.delenv("APPWORLD_DATA_BUNDLE", raising=False)
    return synthetic["root"]


def my_workers() -> list[int]:
    """AppWorld worker processes that are children of this test process."""
    pids = []
    for proc in Path("/proc").iterdir():
        try:
            if not proc.name.isdigit() or "benchmarks/appworld/worker.py" not in (proc / "cmdline").read_text():
                continue
            ppid = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if ppid == os.getpid():
            pids.append(int(proc.name))
    return pids


def tgc_sgc(records: list[dict]) -> tuple[float, float]:
    """AppWorld's definitions: TGC = mean task success; SGC = mean over scenarios of the min task success."""
    by_scenario = defaultdict(list)
    for r in records:
        by_scenario[r["scenario_id"]].append(bool(r["success"]))
    tgc = 100 * sum(bool(r["success"]) for r in records) / len(records)
    sgc = 100 * sum(all(v) for v in by_scenario.values()) / len(by_scenario)
    return round(tgc, 1), round(sgc, 1)


def run(runs_dir: Path, *overrides: str, **model_kwargs):
    cfg = compose("benchmark=appworld", f"runs_dir={runs_dir}", "run_name=t", "progress=false", *overrides)
    kwargs = FrozenMap({**cfg.model.kwargs, **model_kwargs})
    summary = run_job(replace(cfg, model=replace(cfg.model, kwargs=kwargs)))
    return summary, read_records(Path(summary["run_dir"]))


def test_oracle_gold_solutions_pass_real_evaluator(appworld_root, runs_dir):
    summary, records = run(runs_dir, "model=oracle", "benchmark.split=train", "concurrency=2")
    assert summary["infra_errors"] == 0 and {r["task_id"] for r in records} == set(TRAIN)
    for r in records:
        assert (r["success"], r["reward"], r["error"], r["termination"]) == (True, 1.0, None, "completed"), r
        assert (r["pass_count"], r["num_tests"], r["difficulty"]) == (2, 2, TRAIN[r["task_id"]])
        assert r["scenario_id"] == r["task_id"][:7] and r["steps"] == 1 and r["prompt_tokens"] > 500
    assert tgc_sgc(records) == (100.0, 100.0)
    bench = AppWorldBenchmark(compose("benchmark=appworld", "benchmark.split=train").benchmark)
    first = records[0]
    trajectory = bench.load_trajectory(Path(summary["run_dir"]) / first["trajectory"], first)
    assert trajectory.success and "Num Passed Tests : 2" in trajectory.feedback
    assert "solution(apis, requester)" in trajectory.messages[2]["content"]  # the gold code ran as the agent's step
    assert my_workers() == []  # every engine worker stopped at the end of the job


def test_wrong_answers_fail_with_evaluator_report_and_tgc_sgc(appworld_root, runs_dir):
    # A model that always answers 5: right for a1b2c3d_* and b2c3d4e_1, wrong for b2c3d4e_2 (2 + 4).
    reply = "I will answer.\n```python\napis.supervisor.complete_task(answer=5)\n```"
    summary, records = run(runs_dir, "model=litellm", "model.name=gpt-4o", "benchmark.split=train",
                           "concurrency=1", mock_response=reply)
    by_id = {r["task_id"]: r for r in records}
    wrong = by_id["b2c3d4e_2"]
    assert (wrong["success"], wrong["pass_count"], wrong["num_tests"], wrong["reward"]) == (False, 1, 2, 0.5)
    assert wrong["error"] is None and wrong["termination"] == "completed"
    report = AppWorldBenchmark(compose("benchmark=appworld").benchmark).load_trajectory(
        Path(summary["run_dir"]) / wrong["trajectory"], wrong).feedback
    assert "Num Failed Tests : 1" in report and "the answer is right" in report and "'5' == '6'" in report
    assert all(by_id[i]["success"] for i in TRAIN if i != "b2c3d4e_2")
    assert tgc_sgc(records) == (80.0, 50.0)  # scenario b2c3d4e fails as a whole
    frame = load_records([summary["run_dir"]])  # and analysis/ aggregates these records the same way
    assert (metrics.tgc(frame), metrics.sgc(frame)) == pytest.approx((0.8, 0.5))


def test_worker_killed_mid_task_is_infra_error_and_next_task_runs(appworld_root, runs_dir, monkeypatch):
    real_request = appworld_pool.Worker.request
    seen_pids: list[int] = []

    def request(self, op, timeout_s, **args):
        if op == "execute":
            seen_pids.append(self.pid)
            if len(seen_pids) == 1:
                os.kill(self.pid, signal.SIGKILL)  # the engine dies while the task's code is running
        return real_request(self, op, timeout_s, **args)

    monkeypatch.setattr(appworld_pool.Worker, "request", request)
    summary, records = run(runs_dir, "model=oracle", "benchmark.split=train", "concurrency=1",
                           "benchmark.task_ids=[a1b2c3d_1,a1b2c3d_2]")
    by_id = {r["task_id"]: r for r in records}
    killed, after = by_id["a1b2c3d_1"], by_id["a1b2c3d_2"]
    assert (killed["error"], killed["success"], killed["termination"]) == ("infra", False, "infra_error")
    assert "engine worker failed" in killed["error_detail"] and killed["steps"] == 1  # its tokens still count
    assert (after["success"], after["error"]) == (True, None)
    assert len(set(seen_pids)) == 2 and summary["infra_errors"] == 1  # a fresh worker took the next task
    assert my_workers() == []


def test_missing_data_exits_2_and_writes_nothing(tmp_path, runs_dir):
    empty = tmp_path / "empty-root"
    empty.mkdir()
    # the download really is attempted, through a proxy on a closed local port: it fails on any machine
    dead_proxy = "http://127.0.0.1:9"
    env = {"APPWORLD_ROOT": str(empty), "APPWORLD_DATA_BUNDLE": "", "HTTPS_PROXY": dead_proxy,
           "https_proxy": dead_proxy, "NO_PROXY": "", "no_proxy": ""}
    proc = run_in_process("benchmark=appworld", "model=oracle", runs_dir=runs_dir, env=env)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "AppWorld data not found" in proc.stderr and "download data" in proc.stderr
    assert "APPWORLD_DATA_BUNDLE" in proc.stderr and "APPWORLD_ROOT" in proc.stderr
    assert not runs_dir.exists() and list(empty.iterdir()) == []
    proc = run_in_process("benchmark=appworld", runs_dir=runs_dir,
                          env={**env, "APPWORLD_DATA_BUNDLE": str(tmp_path / "no-such.bundle")})
    assert proc.returncode == 2 and "no such file" in proc.stderr and not runs_dir.exists()


def test_bundle_is_unpacked_with_appworlds_helper(synthetic, tmp_path, monkeypatch):
    root = tmp_path / "fresh-root"
    monkeypatch.setenv("APPWORLD_ROOT", str(root))
    monkeypatch.setenv("APPWORLD_DATA_BUNDLE", str(synthetic["bundle"]))
    bench = AppWorldBenchmark(compose("benchmark=appworld", "benchmark.split=dev").benchmark)
    bench.validate()
    assert [t.id for t in bench.tasks()] == ["c3d4e5f_1", "c3d4e5f_2"]
    assert (root / "data" / "tasks" / "c3d4e5f_1" / "specs.json").is_file()


def test_gold_solution_is_the_tasks_solution_code_where_the_split_ships_one(appworld_root):
    """What an ACE Reflector allowed ground truth sees on AppWorld (as ace-appworld gives its Reflector)."""
    train = AppWorldBenchmark(compose("benchmark=appworld", "benchmark.split=train").benchmark)
    test = AppWorldBenchmark(compose("benchmark=appworld", "benchmark.split=test_normal").benchmark)
    try:
        gold = train.gold_solution(train.tasks()[0])
        missing = test.gold_solution(test.tasks()[0])
    finally:
        train.close()
        test.close()
    assert "def solution(apis, requester)" in gold and gold.rstrip().endswith("solution(apis, requester)")
    assert missing is None and my_workers() == []


# --- request assembly on AppWorld (harness/assembly/) ------------------------------------------------
PRINTS = "I look.\n```python\nprint(' '.join(str(i) for i in range(400)))\n```"  # ~800 tokens of output per step


@pytest.mark.parametrize("policy", ["fail", "priority_drop"])
def test_context_policy_on_the_real_engine(appworld_root, runs_dir, policy):
    """A window the rounds outgrow: `fail` ends the episode as context_overflow (a failure of the treatment,
    counted); `priority_drop` folds the oldest rounds into the code-made summary and runs to max_steps."""
    _, (record,) = run(runs_dir, "model=litellm", "model.name=gpt-4o", "model.context_window=4000",
                       "benchmark.split=train", "benchmark.task_ids=[a1b2c3d_1]", "benchmark.max_steps=6",
                       f"benchmark.context_policy={policy}", mock_response=PRINTS)
    assert record["context_policy"] == policy
    if policy == "fail":
        assert (record["error"], record["success"]) == ("context_overflow", False) and record["summarised_turns"] == 0
        return
    assert (record["error"], record["steps"]) == ("max_steps", 6) and record["summarised_turns"] > 0
    assert record["job"].endswith("@context_policy=priority_drop")


def scripted_answers(self, messages, tools=None):
    """SCRIPTED stand-in for ModelClient.complete: computes 2 + 3, then answers 4 (wrong); asked from the
    clean request of answer_mode=rebuild, it answers what the code printed there."""
    body = messages[1]["content"]
    if "Write the final step now" in body:
        printed = re.search(r"It printed:\n(\d+)", body)[1]
        reply = f"```python\napis.supervisor.complete_task(answer={printed})\n```"
    elif not any(m["role"] == "assistant" for m in messages):
        reply = "```python\nprint(2 + 3)\n```"
    else:
        reply = "```python\napis.supervisor.complete_task(answer=4)\n```"
    return Completion(content=reply, tool_calls=(), usage=Usage(prompt_tokens=500, completion_tokens=20,
                                                                  cached_tokens=None, cost_usd=None, latency_s=0.0))


@pytest.mark.parametrize("mode", ["plain", "rebuild"])
def test_answer_mode_rebuild_on_the_real_engine(appworld_root, runs_dir, monkeypatch, mode):
    monkeypatch.setattr(ModelClient, "complete", scripted_answers)
    summary, (record,) = run(runs_dir, "model=litellm", "model.name=gpt-4o", "benchmark.split=train",
                             "benchmark.task_ids=[a1b2c3d_1]", f"benchmark.answer_mode={mode}")
    if mode == "plain":  # the working answer (4) is what AppWorld's evaluator judges
        assert (record["success"], record["answer_calls"], record["steps"]) == (False, 0, 2)
        return
    assert (record["success"], record["error"], record["answer_calls"], record["steps"]) == (True, None, 1, 3)
    assert [s["phase"] for s in record["step_usage"]] == ["act", "act", "answer"]
    assert record["prompt_tokens"] == 1500  # the extra call's tokens count
    doc = json.loads((Path(summary["run_dir"]) / record["trajectory"]).read_text())
    assert len(doc["steps"]) == 2 and "answer=4" in doc["steps"][1]["working_reply"]
    assert doc["steps"][1]["code"] == "apis.supervisor.complete_task(answer=5)"
