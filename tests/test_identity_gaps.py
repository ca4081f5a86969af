"""Issue 33: a task set is its task file, split, policy and database; a run names the memory artifact it used.
Both cases are built as a user builds them: real oracle runs through the harness (packaged retail data, a copy
with one line appended to policy.md via benchmark.data_dir; one memory path rewritten between two runs, the runs
then copied without config.yaml)."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

from analysis.table import main as table_main
from harness.run import compose_job
from harness.runner import run_job
from tau2_fakes import packaged_folder


SAMPLE = Path(__file__).resolve().parent.parent / "strategies" / "samples" / "tau2_sample.jsonl"


def _run(tmp_path: Path, name: str, *overrides: str) -> Path:
    cfg = compose_job(["model=oracle", "benchmark=tau2_retail", "benchmark.limit=2", f"runs_dir={tmp_path / 'runs'}",
                       f"run_name={name}", "progress=false", f"memory={SAMPLE}", *overrides])
    return Path(run_job(cfg)["run_dir"])


def _copy_of_retail(root: Path, policy_line: str | None) -> Path:
    folder = root / "tau2" / "domains" / "retail"
    shutil.copytree(packaged_folder("retail"), folder)
    if policy_line:
        with open(folder / "policy.md", "a", encoding="utf-8") as f:
            f.write(policy_line)
    return root


def test_a_changed_policy_is_another_task_set_and_an_unchanged_copy_is_not(tmp_path, capsys):
    none = _run(tmp_path, "none", "strategy=none")
    same = _run(tmp_path, "same", "strategy=full", f"benchmark.data_dir={_copy_of_retail(tmp_path / 'd1', None)}")
    changed = _copy_of_retail(tmp_path / "d2", "\nAlways offer a discount.\n")
    edited = _run(tmp_path, "edited", "strategy=full", f"benchmark.data_dir={changed}")

    assert table_main([str(none), str(same)]) == 0  # the same files: one experiment, whatever their folder
    capsys.readouterr()
    assert table_main([str(none), str(edited)]) == 2
    err = capsys.readouterr().err
    assert "differ in policy" in err and "different experiments" in err and "--shared-tasks" in err
    assert table_main([str(none), str(edited), "--shared-tasks"]) == 0
    out = capsys.readouterr().out
    above = out.split("model ")[0]  # what is said above the table
    assert "differ in policy" in above
    policy_now = hashlib.sha256((changed / "tau2/domains/retail/policy.md").read_bytes()).hexdigest()[:12]
    policy_packaged = hashlib.sha256((packaged_folder("retail") / "policy.md").read_bytes()).hexdigest()[:12]
    task_sets = " ".join(above.split()).split("Task set: ")[1:]  # the "Task set" lines, unwrapped
    assert len(task_sets) == 2 and any(f"policy sha256 {policy_now}" in line for line in task_sets)
    assert any(f"policy sha256 {policy_packaged}" in line for line in task_sets)


def _copied_without_config(run: Path, dest: Path, manifest: bool = True) -> Path:
    shutil.copytree(run, dest, ignore=shutil.ignore_patterns("config.yaml", *(() if manifest else ("manifest.json",))))
    return dest


def test_each_run_names_the_artifact_it_used_or_mem_unknown_and_pooling_refuses_unknown(tmp_path, capsys):
    memory = tmp_path / "memory.jsonl"
    lines = SAMPLE.read_text().splitlines(keepends=True)
    memory.write_text("".join(lines))
    first = _run(tmp_path, "first", "strategy=full", f"memory={memory}")
    used_first = hashlib.sha256(memory.read_bytes()).hexdigest()[:6]
    memory.write_text("".join(lines[:-1]))  # the same path, other contents
    second = _run(tmp_path, "second", "strategy=full", f"memory={memory}")
    used_second = hashlib.sha256(memory.read_bytes()).hexdigest()[:6]
    memory.write_text("".join(lines[:-2]))  # and now a third, which neither run used
    now = hashlib.sha256(memory.read_bytes()).hexdigest()[:6]

    a, b = (_copied_without_config(r, tmp_path / "copies" / r.name) for r in (first, second))
    for extra in ([], ["--pool-runs"]):  # two artifacts: two rows, never blended
        assert table_main([str(a), str(b), *extra]) == 0
        out = capsys.readouterr().out
        assert f"mem {used_first}" in out and f"mem {used_second}" in out and f"mem {now}" not in out
        assert len([line for line in out.splitlines() if "full [" in line and "mem " in line]) >= 2

    old_a, old_b = (_copied_without_config(r, tmp_path / "old" / r.name, manifest=False) for r in (first, second))
    assert table_main([str(old_a)]) == 0
    out = capsys.readouterr().out
    assert f"Memory: mem unknown = {memory}" in out and f"mem {now}" not in out
    assert table_main([str(old_a), str(old_b), "--pool-runs"]) == 2
    err = capsys.readouterr().err
    assert "mem unknown" in err and "not pooled" in err


def test_an_older_packaged_run_and_a_newer_one_holding_the_same_episodes_are_an_overlap(tmp_path):
    """Records from before the packaged policy/db were fingerprinted are the same task set as newer ones: the
    same episodes in both runs are refused as an overlap (never two cells blended into one row)."""
    import pytest
    from analysis import load_records
    from analysis.runs.load import RunsOverlap
    from test_cell_identity import drawn, write_run

    old_set = {"tau2": "26.3", "domain": "retail", "source": "packaged", "tasks_sha256": "76e1fa649a35" + "0" * 52}
    new_set = {**old_set, "policy_sha256": "ab" * 32, "db_sha256": "cd" * 32}
    a = write_run(tmp_path / "old", drawn("none", 20, 1, 0.5, 1, task_set=old_set))
    b = write_run(tmp_path / "new", drawn("none", 20, 1, 0.5, 2, task_set=new_set))
    with pytest.raises(RunsOverlap):
        load_records([a, b])
    pooled = load_records([a, b], overlap="pool")
    assert sorted(pooled["trial"].unique()) == [0, 1]  # pooled as two trials of one cell, said so
