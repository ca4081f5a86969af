"""Round trips with tau2-bench's own results files: `make export-tau2` (tau2's compute_metrics gives our Pass^k)
and `make import-tau2` (an exported file comes back as the same successes per task and trial)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from tau2.data_model.simulation import Results
from tau2.metrics.agent_metrics import compute_metrics

from analysis import load_records, pass_hat_ks
from analysis.export_tau2 import cell_name, export
from analysis.export_tau2 import main as export_main
from analysis.statistics.metrics import GROUP, valid, with_assembly
from conftest import SAMPLE_MEMORY, read_records, run_in_process
from memory_kit.memory_file import load_memory

TRIALS = 3


@pytest.fixture(scope="module")
def mixed_run(tmp_path_factory) -> Path:
    """A real oracle sweep with scripted failures on a deterministic share of task x trial: rewards are mixed."""
    runs_dir = tmp_path_factory.mktemp("tau2files") / "runs"
    proc = run_in_process("model=oracle", "strategy=none,full", "benchmark=tau2_retail", "benchmark.limit=4",
                          f"benchmark.trials={TRIALS}", f"memory={SAMPLE_MEMORY}", "run_name=mixed",
                          "+model.kwargs.metadata.sabotage_rate=0.35", runs_dir=runs_dir, multirun=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return runs_dir / "mixed"


def copy_run(run: Path, tmp_path: Path) -> Path:
    out = tmp_path / run.name
    shutil.copytree(run, out)
    return out


def assert_tau2_metrics_equal_ours(run: Path, out: Path) -> dict[str, dict[int, float]]:
    """Every cell's exported file, loaded by tau2's own model, gives our table's Pass^k for k = 1..trials."""
    written, refused = export([str(run)], out)
    assert not refused
    df = with_assembly(load_records([run]))
    seen = {}
    for key, cell in valid(df).groupby(GROUP, sort=False, dropna=False):
        path = out / f"{cell_name(key)}.json"
        assert path in written
        results = Results.load(path)  # tau2's model validates the whole document
        assert len(results.simulations) == len(cell) and results.info.num_trials == TRIALS
        ours, theirs = pass_hat_ks(cell), compute_metrics(results).pass_hat_ks
        assert set(ours) == set(theirs) == set(range(1, TRIALS + 1))
        for k in ours:
            assert theirs[k] == pytest.approx(ours[k], abs=1e-12), (key, k)
        seen[key[-1]] = ours
    return seen


def test_export_gives_tau2_the_same_pass_k_on_mixed_rewards(mixed_run, tmp_path):
    records = read_records(mixed_run)
    assert 0 < sum(r["success"] for r in records) < len(records)  # the sabotage made a real mix
    passk = assert_tau2_metrics_equal_ours(mixed_run, tmp_path / "out")
    assert set(passk) == {"none", "full [unknown provenance]"}
    assert any(0 < v < 1 for ks in passk.values() for v in ks.values())  # not trivially 0 or 1
    one = Results.load(next((tmp_path / "out").glob("*__none.json")))
    assert one.info.agent_info.llm == records[0]["model"] and one.info.user_info.llm == records[0]["user_model"]


def test_export_counts_failed_records_tau2_would_not_see(mixed_run, tmp_path):
    """A record with no trajectory, and one marked failed after its episode scored 1: both failed trials in our
    table, so in the exported file too (otherwise tau2's Pass^k would be higher than ours)."""
    run = copy_run(mixed_run, tmp_path)
    lines = (run / "results.jsonl").read_text().splitlines()
    rows = [json.loads(line) for line in lines]
    won = [i for i, r in enumerate(rows) if r["success"] and r["strategy"] == "none"]
    lost, late = won[0], won[1]
    (run / rows[lost]["trajectory"]).unlink()
    rows[lost].update(success=False, reward=0.0, error="harness", error_detail="constructed", trajectory=None)
    rows[late].update(success=False, error="strategy", error_detail="constructed: online update failed")
    (run / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert_tau2_metrics_equal_ours(run, tmp_path / "out")
    results = Results.load(next((tmp_path / "out").glob("*__none.json")))
    by_key = {(s.task_id, s.trial): s for s in results.simulations}
    empty = by_key[(rows[lost]["task_id"], rows[lost]["trial"])]
    assert empty.messages == [] and empty.termination_reason == "agent_error" and empty.reward_info.reward == 0
    zeroed = by_key[(rows[late]["task_id"], rows[late]["trial"])]
    assert zeroed.reward_info.reward == 0 and zeroed.reward_info.info["memdeliv"]["recorded_reward"] == 1.0


def test_export_refuses_a_cell_whose_trajectory_file_is_missing(mixed_run, tmp_path, capsys):
    """The cell would lose an episode: not written, named with the file; the other cell is still written."""
    run = copy_run(mixed_run, tmp_path)
    victim = next(r for r in read_records(run) if r["strategy"] == "none")
    (run / victim["trajectory"]).unlink()
    assert export_main([str(run), "--out", str(tmp_path / "out")]) == 2
    assert victim["trajectory"] in capsys.readouterr().err
    assert [p.name.split("__")[3] for p in (tmp_path / "out").glob("*.json")] == ["full"]


def exported_none(run: Path, out: Path) -> Path:
    export([str(run)], out)
    return next(out.glob("*__none.json"))


def import_main(*argv: str) -> int:
    from harness.import_tau2 import main
    return main(list(argv))


def test_import_of_an_exported_file_gives_back_the_same_success_per_task(mixed_run, tmp_path, capsys):
    file = exported_none(mixed_run, tmp_path / "out")
    assert import_main(str(file), "--run", "back", "--runs-dir", str(tmp_path / "runs")) == 0
    assert "every task identical to tau2-bench v0.2.0 retail" in capsys.readouterr().out
    original = {(r["task_id"], r["trial"]): r for r in read_records(mixed_run) if r["strategy"] == "none"}
    back = {(r["task_id"], r["trial"]): r for r in read_records(tmp_path / "runs" / "back")}
    assert {k: r["success"] for k, r in back.items()} == {k: r["success"] for k, r in original.items()}
    assert len({r["success"] for r in back.values()}) == 2  # both outcomes came back
    for key, r in back.items():
        assert set(original[key]) <= set(r)  # the keys our records have
        for figure in ("reward", "steps", "prompt_tokens", "completion_tokens", "user_prompt_tokens", "seed"):
            assert r[figure] == original[key][figure], (key, figure)
        assert (r["strategy"], r["split"], r["model"]) == ("none", "test", original[key]["model"])
        assert r["task_set"]["known_as"] == original[key]["task_set"]["known_as"] and "mismatch" not in r["task_set"]
        assert Results.load(tmp_path / "runs" / "back" / r["trajectory"]).simulations[0].task_id == key[0]


def test_imported_cell_is_a_row_of_the_table(mixed_run, tmp_path, capsys):
    from analysis.table import main as table_main

    file = exported_none(mixed_run, tmp_path / "out")
    assert import_main(str(file), "--run", "back", "--runs-dir", str(tmp_path / "runs")) == 0
    capsys.readouterr()
    assert table_main([str(tmp_path / "runs" / "back")]) == 0
    table = capsys.readouterr().out
    ours = with_assembly(load_records([mixed_run]))
    rate = valid(ours[ours["strategy"] == "none"]).groupby("task_id")["success"].mean().mean()
    row = next(line for line in table.splitlines() if line.startswith(read_records(mixed_run)[0]["model"]))
    assert " none " in row and f"{100 * rate:.1f}%" in row


def test_import_states_a_task_set_mismatch(mixed_run, tmp_path, capsys):
    doc = json.loads(exported_none(mixed_run, tmp_path / "out").read_text())
    changed, renamed = doc["tasks"][0], doc["tasks"][1]
    changed["user_scenario"]["instructions"]["reason_for_call"] = "A different request."
    for sim in (s for s in doc["simulations"] if s["task_id"] == renamed["id"]):
        sim["task_id"] = "99999"
    renamed["id"] = "99999"  # a task the packaged set does not have
    file = tmp_path / "edited.json"
    file.write_text(json.dumps(doc))
    assert import_main(str(file), "--run", "edited", "--runs-dir", str(tmp_path / "runs")) == 0
    out = capsys.readouterr().out
    said = f"1 differ ({changed['id']}) and 1 are not in it (99999)"
    assert "TASK SET MISMATCH" in out and said in out and "split imported" in out
    run = tmp_path / "runs" / "edited"
    job = next(iter(json.loads((run / "manifest.json").read_text())["jobs"].values()))
    assert said in job["task_set_mismatch"]
    records = read_records(run)
    assert len(records) == len(doc["simulations"]) and {r["split"] for r in records} == {"imported"}
    assert "known_as" not in records[0]["task_set"] and said in records[0]["task_set"]["mismatch"]


def test_import_refuses_bad_input_and_writes_nothing(mixed_run, tmp_path, capsys):
    runs = tmp_path / "runs"
    junk = tmp_path / "junk.json"
    junk.write_text('{"info": {}}')
    assert import_main(str(junk), "--run", "x", "--runs-dir", str(runs)) == 2
    assert "not a tau2 results file" in capsys.readouterr().err and not runs.exists()

    file = exported_none(mixed_run, tmp_path / "out")
    assert import_main(str(file), "--run", "x", "--runs-dir", str(runs), "--split", "train") == 2
    ids = sorted({r["task_id"] for r in read_records(mixed_run)}, key=int)
    assert f"not in the train split: {', '.join(ids)}" in capsys.readouterr().err and not runs.exists()

    assert import_main(str(file), "--run", "x", "--runs-dir", str(runs)) == 0
    before = (runs / "x" / "results.jsonl").read_text()
    assert import_main(str(file), "--run", "x", "--runs-dir", str(runs)) == 0  # the same file again: nothing to do
    assert "already imported" in capsys.readouterr().out
    other = tmp_path / "other.json"
    other.write_text(file.read_text().replace('"trial": 0', '"trial": 7', 1))  # another file, same cell
    assert import_main(str(other), "--run", "x", "--runs-dir", str(runs)) == 2
    assert "already holds" in capsys.readouterr().err
    assert (runs / "x" / "results.jsonl").read_text() == before


def test_memory_from_results_learns_from_train_trajectories_only(mixed_run, tmp_path, capfd):
    from harness.memory.build import main as memory_main
    from harness.scripted import reflector

    runs = tmp_path / "runs"
    proc = run_in_process("model=oracle", "strategy=none", "benchmark=tau2_retail", "benchmark.split=train",
                          "benchmark.limit=2", "run_name=train", runs_dir=runs)
    assert proc.returncode == 0, proc.stderr[-3000:]
    train_file = exported_none(runs / "train", tmp_path / "train_out")
    args = ["--runs-dir", str(runs), "--extractor", reflector.MODEL, "--from-results"]
    assert memory_main(["--name", "fromfile", *args, str(train_file)]) == 0
    guidelines, meta = load_memory(runs / "memory" / "fromfile" / "memory.jsonl")
    train_ids = sorted({r["task_id"] for r in read_records(runs / "train")}, key=int)
    learned = meta["learned_from"]
    assert guidelines and learned["split"] == "train" and learned["task_ids"] == train_ids
    assert learned["imported_from"] == str(train_file) and learned["task_set"]["source"] == "imported results file"
    assert {t for g in guidelines for t in g.source_task_ids} <= set(train_ids)

    test_file = exported_none(mixed_run, tmp_path / "test_out")
    capfd.readouterr()
    assert memory_main(["--name", "fromtest", *args, str(test_file)]) == 2
    err = capfd.readouterr().err
    test_ids = sorted({r["task_id"] for r in read_records(mixed_run)}, key=int)
    assert f"not in the train split: {', '.join(test_ids)}" in err and "nothing learned" in err
    assert not (runs / "memory" / "fromtest" / "memory.jsonl").exists()
