"""The compare notebook finds its runs from what the user gives (its RUNS cell, $MEMDELIV_RUNS), also when copied
out of the checkout; inside one it falls back to runs/; with nothing to read it says how to name the runs."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import nbformat
import pytest
from conftest import HUNG_S
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from analysis.views.compare import NoRuns, runs_to_compare

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "analysis" / "notebooks" / "compare.ipynb"
TEMPLATE = ROOT / "tests" / "fixtures" / "runs" / "oracle_retail" / "results.jsonl"


def small_run(folder: Path, name: str, wins: dict[str, int]) -> Path:
    """A run of 3 tasks x 1 trial per strategy, model `nb/<name>`; `wins[strategy]` tasks succeed. Records are
    copies of a real one (the oracle fixture's first) with the fields that differ rewritten."""
    template = json.loads(TEMPLATE.read_text().splitlines()[0])
    run = folder / name
    run.mkdir(parents=True)
    lines = []
    for strategy, won in wins.items():
        for t in range(3):
            lines.append(json.dumps({**template, "run": name, "model": f"nb/{name}", "strategy": strategy,
                                     "job": f"tau2_retail/test/nb/{name}/{strategy}", "task_id": str(t),
                                     "success": t < won, "reward": float(t < won)}) + "\n")
    (run / "results.jsonl").write_text("".join(lines))
    return run


def execute_copy(tmp_path: Path, runs: list[Path] | None = None) -> nbformat.NotebookNode:
    """Execute a copy of the notebook in a folder outside the checkout, RUNS set in its parameter cell."""
    outside = tmp_path / "my-notebooks"
    outside.mkdir()
    shutil.copy(NOTEBOOK, outside / "compare.ipynb")
    nb = nbformat.read(outside / "compare.ipynb", as_version=4)
    (param,) = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    if runs is not None:
        param.source = f"RUNS = {[str(r) for r in runs]!r}"
    NotebookClient(nb, timeout=HUNG_S, startup_timeout=HUNG_S, kernel_name="python3",
                   resources={"metadata": {"path": str(outside)}}).execute()
    return nb


def text_of(nb: nbformat.NotebookNode) -> str:
    return "\n".join(str(o.get("data", {}).get("text/plain", "")) + str(o.get("text", ""))
                     for c in nb.cells if c.cell_type == "code" for o in c.outputs)


def test_a_copy_outside_the_checkout_compares_the_runs_it_is_given(tmp_path, monkeypatch):
    monkeypatch.delenv(runs_env := "MEMDELIV_RUNS", raising=False)
    assert not str(tmp_path.resolve()).startswith(str(ROOT))
    elsewhere = tmp_path / "results"
    a = small_run(elsewhere, "alpha", {"none": 1, "full": 3})
    b = small_run(elsewhere, "beta", {"none": 2, "full": 2})
    nb = execute_copy(tmp_path, runs=[elsewhere])  # a folder of runs: both found
    text = text_of(nb)
    assert "2 run(s): runs from RUNS" in text and runs_env not in text
    assert "nb/alpha" in text and "nb/beta" in text
    assert "success [alpha]" in text and "success [beta]" in text  # the two runs side by side
    assert not any(o.get("output_type") == "error" for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    assert a.is_dir() and b.is_dir()


def test_a_copy_outside_the_checkout_given_nothing_says_how_to_name_runs(tmp_path, monkeypatch):
    monkeypatch.delenv("MEMDELIV_RUNS", raising=False)
    with pytest.raises(CellExecutionError) as failed:
        execute_copy(tmp_path)
    shown = re.sub(r"\x1b\[[0-9;]*m", "", str(failed.value))  # the traceback's colours
    assert "NoRuns: no runs to compare" in shown and "MEMDELIV_RUNS=" in shown and "StopIteration" not in shown


def fake_checkout(root: Path) -> Path:
    (root / "analysis").mkdir(parents=True)
    (root / "analysis" / "load.py").write_text("")
    (root / "configs").mkdir()
    return root


def test_runs_come_from_runs_then_the_environment_then_the_checkout(tmp_path):
    one = small_run(tmp_path / "given", "one", {"none": 1})
    two = small_run(tmp_path / "env", "two", {"none": 1})
    three = small_run(tmp_path / "env", "three", {"none": 1})
    env = {"MEMDELIV_RUNS": os.pathsep.join([str(two), str(three)])}
    assert runs_to_compare([one], env=env, cwd=tmp_path)[0] == [one]
    assert runs_to_compare([], env=env, cwd=tmp_path) == ([two, three], "runs from $MEMDELIV_RUNS")
    assert runs_to_compare([tmp_path / "env"], env={})[0] == [three, two]  # a folder of runs, sorted
    assert runs_to_compare([one / "results.jsonl"], env={})[0] == [one]

    repo = fake_checkout(tmp_path / "repo")
    notebooks = repo / "analysis" / "notebooks"
    notebooks.mkdir()
    with pytest.raises(NoRuns, match="no results.jsonl under .*runs"):  # a checkout with no runs, no fixtures
        runs_to_compare([], env={}, cwd=notebooks)
    mine = small_run(repo / "runs", "mine", {"none": 1})
    runs, where = runs_to_compare([], env={}, cwd=notebooks)
    assert runs == [mine] and where.startswith(f"every run under {repo / 'runs'}")


def test_no_runs_is_a_clear_error(tmp_path):
    with pytest.raises(NoRuns, match="not inside a memdeliv checkout.*RUNS.*MEMDELIV_RUNS"):
        runs_to_compare([], env={}, cwd=tmp_path)
    with pytest.raises(NoRuns, match="no run directory or results.jsonl at .*missing"):
        runs_to_compare([tmp_path / "missing"], env={})
    (tmp_path / "empty").mkdir()
    with pytest.raises(NoRuns, match="no results.jsonl under .*empty"):
        runs_to_compare([], env={"MEMDELIV_RUNS": str(tmp_path / "empty")})


def test_inside_the_checkout_with_no_runs_yet_the_fixtures_are_a_labelled_demo(tmp_path):
    repo = fake_checkout(tmp_path / "repo")
    shutil.copytree(ROOT / "tests" / "fixtures" / "runs", repo / "tests" / "fixtures" / "runs")
    runs, where = runs_to_compare([], env={}, cwd=repo)
    assert [r.name for r in runs] == ["oracle_retail", "constructed_mixed"]
    assert where.startswith("DEMO: no runs under") and "CONSTRUCTED" in where
