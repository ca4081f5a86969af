"""τ² task-set identity and data dirs: fingerprints, a data dir's own tasks/db/policy, the NL-assertion judge
(scripted), the react agent (scripted), and the config errors. Data dirs are built from the packaged files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import HUNG_S, read_records

from harness.benchmarks.tau2.data import TaskSource
from harness.benchmarks.tau2.react import ACT, THINK
from harness.run import compose_job, main
from harness.runner import run_job
from tau2.registry import registry
from tau2_fakes import JUDGE, RECORDING, install_judge, install_recording, make_data_dir

PACKAGED_AIRLINE = "40d692b3fca7"
PACKAGED_RETAIL = "76e1fa649a35"
SAMPLE_MEMORY = Path(__file__).resolve().parent.parent / "strategies" / "samples" / "tau2_sample.jsonl"


def _run(tmp_path: Path, *overrides: str, name: str = "r") -> tuple[Path, list[dict]]:
    cfg = compose_job(["strategy=none", f"runs_dir={tmp_path / 'runs'}", f"run_name={name}", "progress=false",
                       *overrides])
    run_dir = Path(run_job(cfg)["run_dir"])
    return run_dir, read_records(run_dir)


def test_fingerprint_packaged_differs_from_a_modified_data_dir(tmp_path):
    assert TaskSource("airline").fingerprint["tasks_sha256"].startswith(PACKAGED_AIRLINE)
    assert TaskSource("retail").fingerprint["tasks_sha256"].startswith(PACKAGED_RETAIL)

    def fix(tasks):  # a one-word task fix, as tau2-bench's later versions made
        tasks[0]["user_scenario"]["instructions"]["reason_for_call"] += " Please hurry."
        return tasks

    data = make_data_dir(tmp_path / "data", "airline", fix)
    modified = TaskSource("airline", data.resolve())
    packaged = TaskSource("airline")
    assert modified.fingerprint["tasks_sha256"] != packaged.fingerprint["tasks_sha256"]
    assert modified.fingerprint["split_sha256"] == packaged.fingerprint["split_sha256"]
    assert modified.fingerprint["source"] == str(data.resolve()) and packaged.fingerprint["source"] == "packaged"

    # both runs carry their own fingerprint in every record and in the manifest
    run_p, rec_p = _run(tmp_path, "model=oracle", "benchmark=tau2_airline", "benchmark.limit=2", name="p")
    run_m, rec_m = _run(tmp_path, "model=oracle", "benchmark=tau2_airline", "benchmark.limit=2",
                        f"benchmark.data_dir={data}", name="m")
    assert {r["task_set"]["tasks_sha256"] for r in rec_p} == {packaged.fingerprint["tasks_sha256"]}
    assert {r["task_set"]["tasks_sha256"] for r in rec_m} == {modified.fingerprint["tasks_sha256"]}
    assert all(r["success"] for r in rec_p + rec_m)
    for run_dir, source in ((run_p, packaged), (run_m, modified)):
        jobs = json.loads((run_dir / "manifest.json").read_text())["jobs"]
        assert [j["task_set"]["tasks_sha256"] for j in jobs.values()] == [source.fingerprint["tasks_sha256"]]


def test_data_dir_supplies_tasks_split_db_and_policy(tmp_path):
    def edit(tasks):
        for t in tasks:
            if t["id"] == "2":
                t["evaluation_criteria"]["communicate_info"] = ["DATA-DIR-FACT-991"]
                t["evaluation_criteria"]["reward_basis"] = ["DB", "COMMUNICATE"]
        return tasks

    data = make_data_dir(tmp_path / "data", "airline", edit, split={"test": ["2", "6"], "train": ["0"]})
    folder = data / "tau2" / "domains" / "airline"
    (folder / "policy.md").write_text((folder / "policy.md").read_text() + "\nPOLICY-MARKER-55\n")
    db = json.loads((folder / "db.json").read_text())
    user = next(iter(db["users"].values()))
    user["email"] = "datadirina@example.com"
    (folder / "db.json").write_text(json.dumps(db))

    recorder = install_recording()
    run_dir, records = _run(tmp_path, "model=oracle", f"model.name={RECORDING}/agent", "benchmark=tau2_airline",
                            f"benchmark.data_dir={data}")
    assert sorted(r["task_id"] for r in records) == ["2", "6"]  # the data dir's split
    assert all(r["success"] for r in records)  # the evaluator replayed gold on the data dir's db, too
    sim = json.loads((run_dir / next(r for r in records if r["task_id"] == "2")["trajectory"]).read_text())
    assert "DATA-DIR-FACT-991" in json.dumps(sim["simulations"][0]["messages"])
    agent_system = [c["messages"][0]["content"] for c in recorder.calls if c["role"] == "agent"]
    assert agent_system and all("POLICY-MARKER-55" in s for s in agent_system)
    source = TaskSource("airline", data.resolve())
    assert registry.get_env_constructor(source.evaluator_domain)().tools.db.users[user["user_id"]].email \
        == "datadirina@example.com"
    assert registry.get_env_constructor("airline")().tools.db.users[user["user_id"]].email != "datadirina@example.com"


def _nl_tasks(tasks):
    """Two retail test tasks graded by DB + NL assertions, one of which the scripted judge rejects."""
    verdicts = {"1": "The agent told the user the exchange was done.", "3": "The agent apologised. UNMET"}
    for t in tasks:
        if t["id"] in verdicts:
            t["evaluation_criteria"]["reward_basis"] = ["DB", "NL_ASSERTION"]
            t["evaluation_criteria"]["nl_assertions"] = [verdicts[t["id"]]]
    return tasks


def test_nl_assertion_tasks_use_the_judge_ledgered_apart(tmp_path):
    data = make_data_dir(tmp_path / "data", "retail", _nl_tasks, split={"test": ["1", "3", "5"]})
    judge = install_judge()
    run_dir, records = _run(tmp_path, "model=oracle", "benchmark=tau2_retail", f"benchmark.data_dir={data}",
                            f"benchmark.judge_model={JUDGE}/scripted")
    by_id = {r["task_id"]: r for r in records}
    assert by_id["1"]["success"] and not by_id["3"]["success"] and by_id["5"]["success"]
    assert [by_id[t]["judge_calls"] for t in "135"] == [1, 1, 0]  # task 5 keeps DB + COMMUNICATE, no judge
    assert len(judge.prompts) == 2 and "exchange was done" in judge.prompts[0] + judge.prompts[1]
    assert by_id["1"]["judge_prompt_tokens"] > 0 and by_id["5"]["judge_prompt_tokens"] == 0
    for r in records:  # agent tokens are the agent's steps only; the judge is not in them
        assert r["prompt_tokens"] == sum(s["prompt_tokens"] for s in r["step_usage"])
        assert r["judge_model"] == f"{JUDGE}/scripted"
    sim = json.loads((run_dir / by_id["3"]["trajectory"]).read_text())["simulations"][0]
    assert sim["reward_info"]["nl_assertions"][0]["met"] is False


def test_a_task_set_that_needs_a_judge_without_one_is_a_config_error(tmp_path, capsys):
    data = make_data_dir(tmp_path / "data", "retail", _nl_tasks, split={"test": ["1", "3"]})
    runs = tmp_path / "runs"
    with pytest.raises(SystemExit) as exit_info:
        main(["model=oracle", "benchmark=tau2_retail", f"benchmark.data_dir={data}", f"runs_dir={runs}",
              "run_name=x", "progress=false"])
    assert exit_info.value.code == 2 and "benchmark.judge_model" in capsys.readouterr().err
    assert not runs.exists()


def test_data_dir_errors_are_config_errors(tmp_path, capsys):
    for bad, says in ((f"benchmark.data_dir={tmp_path / 'nowhere'}", "missing"),
                      ("benchmark.agent=planner", "tool_calling, react")):
        with pytest.raises(SystemExit) as exit_info:
            main(["model=oracle", "benchmark=tau2_airline", bad, f"runs_dir={tmp_path / 'runs'}", "run_name=x"])
        assert exit_info.value.code == 2 and says in capsys.readouterr().err
    assert not (tmp_path / "runs").exists()


def test_react_agent_thinks_then_acts_with_memory_in_both(tmp_path):
    recorder = install_recording()
    _, records = _run(tmp_path, "model=oracle", f"model.name={RECORDING}/agent", "benchmark=tau2_airline",
                      "benchmark.limit=1", "benchmark.agent=react", "strategy=full", f"memory={SAMPLE_MEMORY}")
    (record,) = records
    assert record["success"] and record["agent"] == "react"
    agent = [c for c in recorder.calls if c["role"] == "agent"]
    thinks, acts = agent[0::2], agent[1::2]
    assert len(thinks) == len(acts) >= 2
    for think, act in zip(thinks, acts):
        assert not think["tools"] and think["messages"][-1]["content"] == THINK
        assert act["tools"] and act["messages"][-1]["content"].startswith(ACT.split("{")[0])
        assert "REASONING-" in act["messages"][-1]["content"]  # the THINK reply is carried into ACT
        for call in (think, act):
            assert "Learned guidelines" in call["messages"][0]["content"]  # memory in both calls
        assert think["messages"][:-1] == act["messages"][:-1]  # the same request up to the phase instruction
    assert record["steps"] == len(agent)  # both calls ledgered as agent calls
    assert all(s["memory_tokens"] > 0 for s in record["step_usage"])
    assert record["prompt_tokens"] == sum(s["prompt_tokens"] for s in record["step_usage"])


def test_tau2_data_fetch_fails_clearly_without_a_reachable_repo(tmp_path):
    import os
    import subprocess

    script = Path(__file__).resolve().parent.parent / "scripts" / "fetch-tau2-data.sh"
    dest = tmp_path / "v1.0.1"
    proc = subprocess.run([str(script), "v1.0.1", str(dest)], capture_output=True, text=True, timeout=HUNG_S,
                          env={**os.environ, "TAU2_REPO": f"file://{tmp_path}/no-such-repo"})
    assert proc.returncode == 1 and "needs internet access" in proc.stderr and not dest.exists()


def test_judge_binding_is_per_thread():
    """Concurrent episodes each ledger their own judge calls (tau2's judge call is routed per thread)."""
    import threading

    import tau2.evaluator.evaluator_nl_assertions as nl
    from harness.benchmarks.tau2.judge import judging
    from harness.ledger import Ledger
    from harness.serving.model_client import ModelClient

    judge = install_judge()
    ledgers = [Ledger(), Ledger()]
    barrier = threading.Barrier(2)

    def episode(i: int) -> None:
        with judging(ModelClient(f"{JUDGE}/j{i}", {}, max_retries=0), ledgers[i]):
            barrier.wait()  # both bound at once
            for _ in range(i + 1):
                nl.NLAssertionsEvaluator.evaluate_nl_assertions([], [f"assertion from episode {i}"])

    threads = [threading.Thread(target=episode, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [len(ledger.judge_calls) for ledger in ledgers] == [1, 2]
    assert sorted(p.count("episode 1") for p in judge.prompts) == [0, 1, 1]


def test_tau2_data_dir_environment_variable(tmp_path, monkeypatch):
    from harness.benchmarks.tau2.data import configured_data_dir

    data = make_data_dir(tmp_path / "data", "airline")
    monkeypatch.setenv("TAU2_DATA_DIR", str(data))
    assert configured_data_dir(None) == data.resolve()
    assert configured_data_dir(str(tmp_path)) == tmp_path.resolve()  # the config key wins
    monkeypatch.delenv("TAU2_DATA_DIR")
    assert configured_data_dir(None) is None
