"""Issue 26 §2-§5: analysis compares cells by what they are (task set, memory artifact), prints the paired size a
claim rests on, counts every cost (the same figure in every view; an unpriced arm is never "the cheapest"; every
role's tokens; infra episodes' spending), says what infra does to a decision, and lists tasks that never ran.
Records are hand-built; every expected number is worked out in the comments."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from conftest import unwrapped

from analysis import load_records, recommend, tables
from analysis.noise_floor import main as noise_floor_main
from analysis.power import main as power_main
from analysis.recommend import main as recommend_main
from analysis.runs import identity
from analysis.table import main as table_main
from analysis.tables import main as tables_main
from harness.runner.job import file_digest

V020 = {"known_as": "tau2-bench v0.2.0 retail", "tasks_sha256": "40d692b3fca7" + "0" * 52, "source": "packaged"}
V101 = {"known_as": "tau2-bench v1.0.1 retail", "tasks_sha256": "ccd8ba737b4c" + "0" * 52, "source": "/data/v1.0.1"}


def rec(strategy: str, task: int, trial: int, success: bool, **extra) -> dict:
    return {"run": "r", "job": f"tau2_retail/test/m/{strategy}", "benchmark": "tau2_retail", "split": "test",
            "model": "m", "strategy": strategy, "task_id": str(task), "trial": trial, "success": success,
            "reward": float(success), "error": None, "seed": 100 + trial, "steps": 3, "prompt_tokens": 1000,
            "completion_tokens": 100, "memory_tokens": 0, "memory": None,
            "memory_provenance": None, **extra}


def write_run(path: Path, rows: list[dict]) -> Path:
    """results.jsonl, and manifest.json's record of each job's memory artifact as the store writes it."""
    path.mkdir(parents=True, exist_ok=True)
    (path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    jobs = {r["job"]: {"memory": {"path": r["memory"], "sha256_16": file_digest(r["memory"])}}
            for r in rows if r.get("memory")}
    (path / "manifest.json").write_text(json.dumps({"jobs": jobs}))
    return path


def drawn(strategy: str, tasks: int, trials: int, p: float, seed: int, **extra) -> list[dict]:
    wins = np.random.default_rng(seed).random((tasks, trials)) < p
    return [rec(strategy, t, k, bool(wins[t, k]), **extra) for t in range(tasks) for k in range(trials)]


# ---- §2 like with like -----------------------------------------------------------------------------------------
def test_two_memory_artifacts_are_two_rows_labelled_by_artifact(tmp_path, capsys):
    guidelines, playbook = tmp_path / "guidelines.jsonl", tmp_path / "playbook.jsonl"
    guidelines.write_text('{"_meta": {"kind": "sample"}}\n{"id": "g1", "text": "a"}\n')
    playbook.write_text('{"_meta": {"kind": "ace_playbook"}}\n{"id": "b1", "text": "b"}\n')
    none = drawn("none", 20, 1, 0.5, 1)
    with_g = drawn("full", 20, 1, 0.5, 2, memory=str(guidelines), memory_provenance="unknown provenance")
    with_p = drawn("full", 20, 1, 0.5, 3, memory=str(playbook), memory_provenance="unknown provenance")
    a, b = write_run(tmp_path / "a", none + with_g), write_run(tmp_path / "b", with_p)
    labels = sorted(load_records([a, b])["strategy"].unique())  # two runs of full: not an overlap, two rows
    assert labels[0] == "full [unknown provenance, mem " + labels[0][-7:-1] + "]" and len(labels) == 3
    assert table_main([str(a), str(b)]) == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith("m ") and "full [unknown provenance, mem" in line]
    assert len(rows) == 2 and f"= {guidelines} (unknown provenance)" in out and f"= {playbook}" in out


def test_a_comparison_across_task_sets_exits_2_naming_both_unless_shared_tasks(tmp_path, capsys):
    old = drawn("none", 30, 1, 0.5, 1, task_set=V020)
    new = drawn("full", 30, 1, 0.7, 2, task_set=V101)[:50]  # (only 30 exist: all of them)
    new = [r | {"task_id": str(int(r["task_id"]) + 10)} for r in new]  # ids 10-39: 20 shared with 0-29
    a, b = write_run(tmp_path / "a", old), write_run(tmp_path / "b", new)
    for main in (table_main, recommend_main, power_main, noise_floor_main):
        assert main([str(a), str(b)]) == 2
        err = capsys.readouterr().err
        assert "v0.2.0" in err and "v1.0.1" in err and "--shared-tasks" in err and err.startswith("memdeliv ")
        assert all(line.startswith("  ") and len(line) <= 160 for line in err.splitlines()[1:])  # one message, wrapped
    assert tables_main([str(a), str(b), "--no-plots", "--out", str(tmp_path / "o")]) == 2
    assert not (tmp_path / "o").exists()
    assert recommend_main([str(a), str(b), "--shared-tasks"]) == 0
    out = " ".join(capsys.readouterr().out.split())  # unwrapped
    assert "on the 20 task ids they share (--shared-tasks)" in out and "rests on 20 tasks x 1 trial" in out


def test_a_rewritten_run_config_or_artifact_is_read_anew_in_one_process(tmp_path):
    """A viewer or notebook stays up while a sweep rewrites config.yaml or `make memory` rebuilds an artifact in
    place: the cached reads must follow the file, or two artifacts would share one fingerprint."""
    run, artifact = tmp_path / "run", tmp_path / "memory.jsonl"
    run.mkdir()
    (run / "config.yaml").write_text("jobs:\n  j: {identity: {memory: {path: a, sha256_16: '1111'}}}\n")
    assert identity.job_identities(run)["j"]["memory"]["sha256_16"] == "1111"
    (run / "config.yaml").write_text("jobs:\n  j: {identity: {memory: {path: a, sha256_16: '22222222'}}}\n")
    assert identity.job_identities(run)["j"]["memory"]["sha256_16"] == "22222222"
    row = {"strategy": "full", "memory": str(artifact), "memory_provenance": "unknown provenance", "job": "k",
           "run_dir": str(run)}
    manifest = {"jobs": {"k": {"memory": {"path": str(artifact), "sha256_16": "aaaa"}}}}
    (run / "manifest.json").write_text(json.dumps(manifest))
    artifact.write_text('{"_meta": {"kind": "sample"}}\n')
    before = identity.memory_artifact(row)[1], identity.artifact_meta(artifact)
    manifest["jobs"]["k"]["memory"]["sha256_16"] = "bbbbbb"
    (run / "manifest.json").write_text(json.dumps(manifest))
    artifact.write_text('{"_meta": {"kind": "simulated", "corrupted": {"kind": "stale"}}}\n{"id": "g1"}\n')
    after = identity.memory_artifact(row)[1], identity.artifact_meta(artifact)
    assert before == ("aaaa", {"kind": "sample"})
    assert after[0] == "bbbbbb" and after[1]["corrupted"] == {"kind": "stale"}
    # a run that recorded nothing is `unknown`, whatever the file holds now
    assert identity.memory_artifact({**row, "run_dir": str(tmp_path / "elsewhere")})[1] == identity.UNKNOWN


def test_the_header_states_the_paired_size_and_margin_talk_needs_the_test():
    # none ran 40 tasks x 2 trials, full 10 of those tasks x 1 trial: the decision rests on 10 x 1 (too few)
    rows = drawn("none", 40, 2, 0.5, 1) + drawn("full", 10, 1, 0.9, 2)
    [r] = recommend.recommend(pd.DataFrame(rows).assign(run_dir="nowhere"))
    text = "\n".join(r.sentences)
    assert "rests on 10 tasks x 1 trial that every strategy ran" in text and "`none`'s 70 other episode" in text
    assert (r.paired_tasks, r.paired_trials) == (10, 1) and not r.decided
    assert "within the margin you set" not in text


# ---- §3 every cost counted -------------------------------------------------------------------------------------
def _priced(strategy: str, n: int, p: float, agent: float, seed: int, **extra) -> list[dict]:
    return [r | {"cost_usd": agent, "user_cost_usd": 0.001, "judge_cost_usd": 0.0, "user_prompt_tokens": 500,
                 "user_completion_tokens": 50, **extra} for r in drawn(strategy, n, 2, p, seed)]


def test_every_view_prints_the_same_cost_for_the_same_cell(tmp_path, capsys):
    run = write_run(tmp_path / "run", _priced("none", 30, 0.95, 0.01, 1) + _priced("full", 30, 0.95, 0.03, 2))
    assert table_main([str(run)]) == 0
    compact = capsys.readouterr().out
    assert table_main([str(run), "--wide"]) == 0
    wide = capsys.readouterr().out
    result = tables.analyse([str(run)], n_boot=50)
    assert recommend_main([str(run), "--by", "cost", "--delta", "15"]) == 0
    advice = capsys.readouterr().out
    for strategy, usd in (("none", "$0.0110"), ("full", "$0.0310")):  # agent + user simulator + judge
        assert usd in next(line for line in compact.splitlines() if line.split()[1:2] == [strategy])
        assert usd in next(line for line in wide.splitlines() if f"| {strategy} " in line)
        assert result.summary.set_index("strategy").loc[strategy, "usd/task"] == pytest.approx(float(usd[1:]))
    assert "$0.0110 to run, as the tables print it" in unwrapped(advice)
    assert "n/a" not in next(line for line in compact.splitlines() if line.split()[1:2] == ["none"])


def test_an_unpriced_arm_is_never_called_the_cheapest():
    # equal success, none priced at $0.01; full's cost missing on 2 of 160 records
    full = _priced("full", 80, 0.6, 0.005, 2)
    for r in full[:2]:
        r["cost_usd"] = None
    rows = pd.DataFrame(_priced("none", 80, 0.6, 0.01, 1) + full).assign(run_dir="nowhere")
    [r] = recommend.recommend(rows, by="cost", delta_pts=30)
    text = " ".join(r.sentences)
    assert set(r.candidates) == {"none", "full"} and r.choice == "none" and r.unpriced == ["full"]
    assert "Recommended: none, the only priced one of 2 shown non-inferior" in text
    assert "Not ranked on price: `full` (USD not reported on 2 of 160 records)" in text


def test_by_tokens_counts_the_strategys_own_calls_and_names_the_roles():
    # full's agent is cheaper (1,100 vs 1,600 tokens) but its LLM ranker spends 100,050 tokens per task
    none = [r | {"prompt_tokens": 1500} for r in drawn("none", 60, 2, 0.6, 1)]
    full = [r | {"strategy_calls": 1, "strategy_prompt_tokens": 100_000, "strategy_completion_tokens": 50,
                 "user_prompt_tokens": 300, "user_completion_tokens": 30} for r in drawn("full", 60, 2, 0.6, 2)]
    [r] = recommend.recommend(pd.DataFrame(none + full).assign(run_dir="nowhere"), delta_pts=30)
    assert r.per_task["full"] == pytest.approx(101_150) and r.per_task["none"] == pytest.approx(1600)
    assert r.choice == "none" and "the agent's calls and the strategy's own" in r.sentences[0]


def test_infra_episodes_spending_is_counted_in_per_task_means():
    # full: 10 long tasks (9,000 tokens) hit infra after spending them, 10 short ones (1,000) finish
    rows = [rec("full", t, 0, False, error="infra", prompt_tokens=9000, completion_tokens=0) for t in range(10)]
    rows += [rec("full", t, 0, True, prompt_tokens=1000, completion_tokens=0) for t in range(10, 20)]
    rows += [rec("full", 20, 0, False, error="infra", steps=0, prompt_tokens=None, completion_tokens=None)]
    s = tables.summary_of(pd.DataFrame(rows).assign(run_dir="nowhere"), n_boot=20).iloc[0]
    assert s["tokens/task"] == pytest.approx((10 * 9000 + 10 * 1000 + 0) / 21)  # not 1,000: what was spent


# ---- §4 infra in the decision, §5 small ones --------------------------------------------------------------------
def test_recommend_says_whether_the_answer_holds_under_both_infra_conventions():
    # equal arms (p = 0.95); none loses its first 20 tasks (40 of 120 episodes) to infra: its deficit is infra
    none = drawn("none", 60, 2, 0.95, 1)
    for r in none[:40]:
        r.update(success=False, error="infra")
    [r] = recommend.recommend(pd.DataFrame(none + drawn("full", 60, 2, 0.95, 2)).assign(run_dir="nowhere"),
                              delta_pts=10)
    text = " ".join(r.sentences)
    assert "Infra errors differ between strategies (none 40/120, full 0/120)" in text and r.choice == "full"
    assert "does NOT hold under both conventions" in text and "with infra excluded it is Recommended: none" in text


def test_tasks_whose_every_trial_was_infra_are_listed(tmp_path, capsys):
    rows = drawn("none", 4, 2, 0.5, 1) + drawn("full", 4, 2, 0.5, 2)
    for r in rows:
        if r["strategy"] == "full" and r["task_id"] in ("1", "3"):
            r.update(success=False, error="infra")
    rows[-1].update(error="infra")  # task 3's second trial too: tasks 1 and 3 never ran; task 0 did once
    result = tables.analyse([str(write_run(tmp_path / "run", rows))], n_boot=20)
    assert any("full: every trial of 2 task(s) was infra: 1, 3" in w for w in result.warnings), result.warnings


def test_the_in_sample_refusal_names_the_artifact_and_how_to_rebuild_it():
    from harness.provenance import ProvenanceError, check_use

    meta = {"kind": "learned", "learned_from": {"benchmark": "tau2_retail", "split": "test", "task_ids": ["1", "2"],
                                                 "model": "openai/gpt-4.1"}}
    with pytest.raises(ProvenanceError) as err:
        check_use(meta, "tau2_retail", ["1", "7"], allow_in_sample=False, memory="runs/memory/m.jsonl", split="test")
    msg = str(err.value)
    assert "runs/memory/m.jsonl was learned from 1 of" in msg and "learned from the test split" in msg
    assert "make memory MODEL=openai/gpt-4.1 BENCH=tau2_retail" in msg and "benchmark.split=test" not in msg
    with pytest.raises(ProvenanceError, match="make ace"):
        check_use(meta | {"kind": "ace_playbook"}, "tau2_retail", ["1"], allow_in_sample=False, split="train")


def test_make_passes_shared_tasks_to_every_comparing_command():
    import subprocess

    out = subprocess.run(["make", "-n", "table", "tables", "power", "recommend", "RUNS=runs/x", "SHARED_TASKS=1"],
                         cwd=Path(__file__).resolve().parent.parent, capture_output=True, text=True, check=True).stdout
    joined = " ".join(out.split())
    for module in ("table", "tables", "power", "recommend"):
        assert "--shared-tasks" in joined.split(f"-m analysis.{module} ", 1)[1].split("-m ", 1)[0], module


def test_best_in_ibms_shape_is_the_highest_success_and_a_tie_is_said(tmp_path):
    """Issue 29: `full` (22.5 %) was named best beside `none` (45.0 %); an all-tied oracle run named core_retrieval."""
    from analysis.views.compare import best_rows

    cell = {"benchmark": "b", "split": "test", "model": "m", "assembly": ""}
    small = pd.DataFrame([cell | {"strategy": "none", "success": 0.45, "tokens/task": 13_000},
                          cell | {"strategy": "full", "success": 0.225, "tokens/task": 33_000}])
    assert best_rows(small)["strategy"].tolist() == ["none"]
    assert best_rows(small, include_baseline=False)["strategy"].tolist() == ["full"]  # IBM's "best memory" row
    tied = pd.DataFrame([cell | {"strategy": s, "success": 1.0, "tokens/task": t}
                         for s, t in (("none", 16_000), ("core_retrieval", 18_000), ("full", 20_000))])
    [row] = best_rows(tied).to_dict("records")
    assert row["strategy"] == "none" and row["best_rule"] == "tied with core_retrieval, full: fewest tokens/task named"
    run = write_run(tmp_path / "run", [rec(s, t, 0, True) for s in ("none", "full") for t in range(3)])
    shown = tables.models_display(tables.analyse([str(run)], n_boot=20).models)
    assert shown["best strategy"].iloc[0] == "none (tied with full: fewest tokens/task named)"
