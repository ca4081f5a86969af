"""ACE online: a crash between an episode's playbook update and its record loses nothing and doubles nothing."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import HUNG_S, REPO, read_records
from strategies.ace.playbook import load_playbook

JOB = REPO / "tests" / "ace_online_job.py"


def run(runs_dir, crash_at: int, trials: int = 1, concurrency: int = 1) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(JOB), str(runs_dir), "ace", str(crash_at), str(trials), str(concurrency)],
                          cwd=REPO / "tests",
                          capture_output=True, text=True, timeout=HUNG_S, env={**__import__("os").environ,
                                                                               "PYTHONPATH": str(REPO)})


def test_a_crash_between_update_and_record_loses_and_doubles_nothing(runs_dir):
    crashed = run(runs_dir, crash_at=2)  # dies after update 2 is saved, before record 2 is written
    assert crashed.returncode == 9, crashed.stderr[-2000:]
    run_dir = runs_dir / "ace"
    assert len(read_records(run_dir)) == 1
    art = next((run_dir / "memory").iterdir())
    playbook, meta = load_playbook(art / "playbook.jsonl")
    assert len(playbook.bullets) == 2 and len(meta["applied"]) == 2  # update 2 is in, its record is not

    resumed = run(runs_dir, crash_at=0)  # re-runs episode 2 (no record) and must not learn from it twice
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert "re-applied" not in resumed.stderr
    records = read_records(run_dir)
    keys = [f"{r['task_id']}#{r['trial']}" for r in records]
    assert len(records) == 3 and len(set(keys)) == 3
    playbook, meta = load_playbook(art / "playbook.jsonl")
    assert sorted(meta["applied"]) == sorted(keys) and meta["updates"] == 3
    assert len(playbook.bullets) == 3  # one bullet per episode: none lost, none applied twice
    history = [json.loads(line) for line in (art / "history.jsonl").read_text().splitlines()]
    updates = [h["episode"] for h in history if h["event"] == "update"]
    assert sorted(updates) == sorted(keys)  # each episode's update exactly once, in record order
    assert updates == keys


def test_each_trial_stream_resumes_from_its_own_playbook(runs_dir):
    crashed = run(runs_dir, crash_at=4, trials=2)  # dies after stream 1's first update, before its record
    assert crashed.returncode == 9, crashed.stderr[-2000:]
    art = next((runs_dir / "ace" / "memory").iterdir())
    assert len(load_playbook(art / "trial_1" / "playbook.jsonl")[0].bullets) == 1

    resumed = run(runs_dir, crash_at=0, trials=2)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    records = read_records(runs_dir / "ace")
    assert len(records) == 6 and len({(r["task_id"], r["trial"]) for r in records}) == 6
    for trial, folder in ((0, art), (1, art / "trial_1")):  # three updates each: none lost, none doubled
        playbook, meta = load_playbook(folder / "playbook.jsonl")
        assert sorted(meta["applied"]) == sorted(f"{r['task_id']}#{trial}" for r in records if r["trial"] == trial)
        assert len(playbook.bullets) == 3 and meta["updates"] == 3
