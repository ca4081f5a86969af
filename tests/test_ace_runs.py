"""Real τ² episodes with the SCRIPTED oracle agent: `ace` records, and the offline adaptation loop
with a SCRIPTED Reflector/Curator (tests/ace_fakes.py). No language model runs here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ace_fakes import MODEL, install_scripted_roles
from conftest import read_records
from harness.memory import ace_adapt
from harness.serving.model_client import count_tokens
from harness.runner import run_job
from strategies.ace.playbook import load_playbook

SAMPLE = "strategies/samples/ace_sample_playbook.jsonl"


@pytest.fixture(scope="module")
def ace_run(tmp_path_factory):
    runs = tmp_path_factory.mktemp("runs")
    cfg = ace_adapt.compose_job(["model=oracle", "strategy=ace", "benchmark=tau2_retail", "benchmark.limit=2",
                                 f"memory={SAMPLE}", f"runs_dir={runs}", "run_name=ace", "progress=false"])
    return cfg, Path(run_job(cfg)["run_dir"])


def test_ace_memory_tokens_are_playbook_tokens_times_steps(ace_run):
    cfg, run_dir = ace_run
    playbook, _ = load_playbook(SAMPLE)
    per_step = count_tokens(cfg.model.name, playbook.render())
    rows = read_records(run_dir)
    assert len(rows) == 2 and per_step > 100
    for r in rows:
        assert r["strategy"] == "ace" and r["error"] is None and r["steps"] > 1
        assert r["memory_tokens"] == per_step * r["steps"]
        assert all(step == [b.id for b in playbook.bullets] for step in r["delivered"])
        assert all(s["memory_tokens"] == per_step for s in r["step_usage"])


def test_offline_adaptation_loop_with_scripted_roles(tmp_path):
    roles = install_scripted_roles()
    lessons = ["Look the order up before promising anything.", "Confirm the refund method before a return.",
               "Read the order status first.", "List every item to exchange before calling the tool."]
    for text in lessons:  # one ADD per training episode (2 tasks x 2 epochs), in order
        roles.queue("curator", {"operations": [{"type": "ADD", "section": "strategies", "content": text}]})
    out = tmp_path / "learned.jsonl"
    code = ace_adapt.main(["model=oracle", "benchmark=tau2_retail", "progress=false", "--runs-dir", str(tmp_path),
                           "--run", "adapt", "--epochs", "2", "--train", "2", "--val", "1", "--out", str(out),
                           "--reflector-model", MODEL, "--curator-model", MODEL, "--dedup-threshold", "none"])
    assert code == 0
    playbook, meta = load_playbook(out)
    report = meta["adaptation"]
    assert report["chosen_epoch"] == 1  # equal held-out scores (the oracle always succeeds): earlier epoch wins
    assert [b.content for b in playbook.bullets] == lessons[:2]
    epoch2, _ = load_playbook(report["epochs"][1]["playbook"])
    assert [b.content for b in epoch2.bullets] == lessons  # epoch 2 continued from epoch 1's playbook
    assert report["val_task_ids"] and set(report["val_task_ids"]).isdisjoint(report["train_task_ids"])
    # provenance: the trained tasks and the held-out tasks that chose the epoch
    learned = meta["learned_from"]
    assert learned["split"] == "train" and learned["selected_on"] == report["val_task_ids"]
    assert sorted(learned["task_ids"]) == sorted(report["train_task_ids"] + report["val_task_ids"])
    assert [e["val"]["success_rate"] for e in report["epochs"]] == [1.0, 1.0]  # the oracle always succeeds
    history = [json.loads(line) for line in out.with_name("learned.history.jsonl").read_text().splitlines()]
    assert [(h["epoch"], h["update"], h["bullets"]) for h in history] == [
        (1, 0, 0), (1, 1, 1), (1, 2, 2), (2, 0, 2), (2, 1, 3), (2, 2, 4)]
    assert sum(c["role"] == "reflector" for c in roles.calls) == 4 and len(roles.calls) == 8
    val = read_records(tmp_path / "adapt" / "epoch2_val")
    assert val[0]["strategy"] == "ace" and val[0]["memory_tokens"] > 0 and len(val[0]["delivered"][0]) == 4


def test_adaptation_rejects_bad_arguments(tmp_path, capsys):
    assert ace_adapt.main(["model=oracle", "benchmark=tau2_retail", "--runs-dir", str(tmp_path), "--val", "500",
                           "--dedup-threshold", "none"]) == 2
    assert "cannot hold out 500" in capsys.readouterr().err


def test_the_old_token_budget_flag_names_its_new_name(capsys):
    """`--token-budget` became `--playbook-token-budget` (it caps the playbook; budget_tokens caps a delivery)."""
    with pytest.raises(SystemExit) as stop:
        ace_adapt.parse_args(["model=oracle", "--token-budget", "500"])
    assert stop.value.code == 2 and "--token-budget is now --playbook-token-budget" in capsys.readouterr().err
    args = ace_adapt.parse_args(["model=oracle", "--playbook-token-budget", "500"])
    assert "strategy.options.playbook_token_budget=500" in ace_adapt.online_options(args)
