"""ace_online's per-trial streams run side by side (threads, up to `concurrency`), each in order: the records
and every stream's playbook are those of a serial run; a kill mid-run loses and doubles no update of any stream."""

from __future__ import annotations

import json
import threading
from dataclasses import replace

import stream_roles
from conftest import HUNG_S, read_records
from harness.run import compose_job
from harness.runner import run_job
from test_ace_online_resume import run as run_job_process
from strategies.ace.playbook import load_playbook


def test_parallel_streams_give_the_records_and_playbooks_of_a_serial_run(artifact, runs_dir):
    stream_roles.install()
    serial = run_job(compose_job(stream_roles.job(artifact, runs_dir, "serial", "concurrency=1")))
    stream_roles.install(gate=threading.Barrier(3, timeout=HUNG_S))  # fails unless all 3 streams overlap
    parallel = run_job(compose_job(stream_roles.job(artifact, runs_dir, "parallel", "concurrency=3")))
    assert serial["executor"] == parallel["executor"] == "streams" and serial["ran"] == parallel["ran"] == 12

    a, b = stream_roles.comparable_records(runs_dir / "serial"), stream_roles.comparable_records(runs_dir / "parallel")
    assert len(a) == 12 and a == b
    pa, pb = stream_roles.playbooks(runs_dir / "serial"), stream_roles.playbooks(runs_dir / "parallel")
    latest = ("playbook.jsonl", "trial_1/playbook.jsonl", "trial_2/playbook.jsonl")
    assert set(latest) <= set(pa) and pa == pb
    # the streams really differ (else a mix-up between them could not show): their own draws, their own bullets
    assert len({tuple(pa[path][1:]) for path in latest}) == 3
    for trial, path in enumerate(latest):
        meta = pa[path][0]["_meta"]
        assert meta["updates"] == 4 and sorted(meta["applied"]) == [f"{k[0]}#{trial}" for k in sorted(a) if k[1] == trial]


def test_a_kill_during_parallel_streams_loses_and_doubles_no_update(runs_dir):
    crashed = run_job_process(runs_dir, crash_at=3, trials=2, concurrency=2)  # dies after the 3rd update overall
    assert crashed.returncode == 9, crashed.stderr[-2000:]
    resumed = run_job_process(runs_dir, crash_at=0, trials=2, concurrency=2)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    records = read_records(runs_dir / "ace")
    assert len(records) == 6 and len({(r["task_id"], r["trial"]) for r in records}) == 6
    art = next((runs_dir / "ace" / "memory").iterdir())
    for trial, folder in ((0, art), (1, art / "trial_1")):  # three updates each: none lost, none doubled
        playbook, meta = load_playbook(folder / "playbook.jsonl")
        assert sorted(meta["applied"]) == sorted(f"{r['task_id']}#{trial}" for r in records if r["trial"] == trial)
        assert len(playbook.bullets) == 3 and meta["updates"] == 3
    history = [json.loads(line) for line in (art / "history.jsonl").read_text().splitlines()]
    updates = [h["episode"] for h in history if h["event"] == "update"]
    # never twice; a line may be missing (the kill can fall between another stream's playbook commit and its
    # history line: docs/store.md, the history is a log, not the commit point)
    assert len(updates) == len(set(updates)) and set(updates) <= {f"{r['task_id']}#{r['trial']}" for r in records}
    manifest = json.loads((runs_dir / "ace" / "manifest.json").read_text())
    assert next(iter(manifest["jobs"].values()))["executor"] == "streams"


def test_a_one_stream_learner_runs_in_order_whatever_concurrency_says(capsys):
    from harness.runner import executors, resolve
    from strategies import StrategyBase

    job = resolve(compose_job(["model=oracle", "strategy=none", "concurrency=4"]))
    one_stream = replace(job, capabilities=replace(job.capabilities, learns_online=True))  # as its class declares
    assert executors.create(one_stream, StrategyBase(), served={}).name == "in order"
    assert "learns online in one stream" in capsys.readouterr().err
    assert executors.create(job, StrategyBase(), served={}).name == "threads"
