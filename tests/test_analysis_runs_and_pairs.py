"""Issue 17 §2: infra errors are failed trials by default, unequal infra rates are warned, Δ is paired on the
(task, trial) pairs both strategies have, and several runs are never silently pooled as extra trials.
All records are hand-built, so every expected number is worked out in the comments."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from analysis import load_records, summarize
from analysis.power import main as power_main
from analysis.runs.load import RunsOverlap
from analysis.statistics.metrics import infra_imbalance
from analysis.table import main as table_main
from analysis.tables import main as tables_main

ROOT = Path(__file__).resolve().parent.parent


def rec(strategy: str, task: int, trial: int, success: bool, error: str | None = None, run: str = "r") -> dict:
    return {"run": run, "job": f"tau2_retail/test/m/{strategy}", "benchmark": "tau2_retail", "split": "test",
            "model": "m", "strategy": strategy, "task_id": str(task), "trial": trial, "success": success,
            "reward": float(success), "error": error, "seed": 100 + trial, "prompt_tokens": 10, "completion_tokens": 1}


def write_run(path: Path, rows: list[dict]) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def two_trials(run: str, infra_in_full: int = 0) -> list[dict]:
    """none and full on 4 tasks x 2 trials; full's first `infra_in_full` records are infra errors."""
    rows = [rec("none", t, k, t % 2 == 0, run=run) for t in range(4) for k in range(2)]
    full = [rec("full", t, k, t != 3, run=run) for t in range(4) for k in range(2)]
    for r in full[:infra_in_full]:
        r.update(success=False, error="infra")
    return rows + full


# ---- infra = failed trial by default, unequal rates warned -----------------------------------------------------
def test_infra_counts_as_a_failed_trial_in_success_and_pass_k():
    df = pd.DataFrame([rec("full", 0, 0, True), rec("full", 0, 1, True, "infra"), rec("full", 1, 0, True),
                       rec("full", 1, 1, True)])  # an infra record that (wrongly) says success still fails
    row = summarize(df, n_boot=20).iloc[0]
    assert (row["records"], row["trials"], row["infra_errors"]) == (4, 2, 1)
    assert row["success"] == pytest.approx((0.5 + 1) / 2) and row["pass^2"] == pytest.approx((0 + 1) / 2)
    out = summarize(df, n_boot=20, exclude=("infra",)).iloc[0]  # the labelled non-default view
    assert (out["records"], out["trials"], out["success"], out["excluded"]) == (3, 1, 1.0, 1)
    assert pd.isna(out.get("pass^2"))  # task 0 has one trial left: no Pass^2


def test_unequal_infra_rates_between_strategies_are_warned(tmp_path, capsys):
    run = write_run(tmp_path / "run", two_trials("run", infra_in_full=2))
    summary = summarize(load_records([run]), n_boot=20)
    (line,) = infra_imbalance(summary)
    assert "tau2_retail/test/m" in line and "none 0/8" in line and "full 2/8" in line
    assert table_main([str(run)]) == 0
    out = capsys.readouterr().out
    assert "WARNING: tau2_retail/test/m: infra errors differ between strategies (none 0/8, full 2/8)" in out
    equal = [r | ({"success": False, "error": "infra"} if r["task_id"] == "0" and r["trial"] == 0 else {})
             for r in two_trials("run")]  # one infra record in each strategy: nothing to warn about
    assert infra_imbalance(summarize(pd.DataFrame(equal), n_boot=20)) == []


# ---- Δ vs none paired on common (task, trial) pairs ------------------------------------------------------------
def test_delta_vs_none_is_paired_on_the_pairs_both_strategies_have(tmp_path, capsys):
    # none ran tasks 0-3 (0, 1 fail; 2, 3 pass: 50%); full ran only tasks 0 and 1 (0 passes: 50%). A difference of
    # means says 0 points; on the tasks both ran full passes 1 of 2 where none passes 0 of 2: +50 points.
    rows = [rec("none", t, 0, t >= 2) for t in range(4)] + [rec("full", 0, 0, True), rec("full", 1, 0, False)]
    s = summarize(pd.DataFrame(rows), n_boot=20).set_index("strategy")
    assert s.loc["full", "success"] == s.loc["none", "success"] == 0.5
    assert s.loc["full", "Δsuccess_pts"] == pytest.approx(50.0) and s.loc["full", "Δpairs"] == 2
    run = write_run(tmp_path / "run", rows)
    assert table_main([str(run)]) == 0
    full = next(line for line in capsys.readouterr().out.splitlines() if line.split()[1:2] == ["full"])
    assert "+50.0 pts on 2 pairs" in full  # none's row holds 4 records: Δ rests on the 2 pairs both have
    rows.append(rec("full", 4, 0, True))  # a task none never ran: left out of Δ, and the table says so
    assert table_main([str(write_run(tmp_path / "more", rows))]) == 0
    full = next(line for line in capsys.readouterr().out.splitlines() if line.split()[1:2] == ["full"])
    assert "+50.0 pts" in full and "on 2 pairs" in full


def test_delta_pairs_trials_too():
    # task 0: none passes trial 0 only; full ran trial 1 only (a failure). Same task, different trials: no pair.
    rows = [rec("none", 0, 0, True), rec("none", 0, 1, False), rec("full", 0, 1, False), rec("none", 1, 0, True),
            rec("full", 1, 0, True)]
    s = summarize(pd.DataFrame(rows), n_boot=20).set_index("strategy")
    assert s.loc["full", "Δpairs"] == 2  # (0, 1) and (1, 0)
    assert s.loc["full", "Δsuccess_pts"] == pytest.approx(0.0)  # (0,1): fail vs fail; (1,0): pass vs pass


# ---- several runs are never silently pooled --------------------------------------------------------------------
def test_two_runs_with_the_same_episodes_are_refused_naming_both(tmp_path, capsys):
    a = write_run(tmp_path / "a", two_trials("a"))
    b = write_run(tmp_path / "b", two_trials("b"))
    with pytest.raises(RunsOverlap, match="hold the same 16 episode"):
        load_records([a, b])
    assert table_main([str(a), str(b)]) == 2
    err = capsys.readouterr().err
    assert str(a) in err and str(b) in err and "--pool-runs" in err
    assert tables_main([str(a), str(b), "--no-plots", "--out", str(tmp_path / "o")]) == 2
    assert power_main([str(a), str(b)]) == 2
    assert not (tmp_path / "o").exists()  # nothing written


def test_pool_runs_counts_them_as_distinct_trials_and_says_seeds_repeat(tmp_path, capsys):
    a = write_run(tmp_path / "a", two_trials("a"))
    b = write_run(tmp_path / "b", two_trials("b"))
    warned = []
    df = load_records([a, b], warn=warned.append, overlap="pool")
    assert sorted(df["trial"].unique()) == [0, 1, 2, 3] and sorted(df["trial_in_run"].unique()) == [0, 1]
    assert any("trial seeds repeat" in w and "as trials 2-3" in w for w in warned)
    row = summarize(df, n_boot=20).set_index("strategy").loc["none"]
    assert row["trials"] == 4
    assert table_main([str(a), str(b), "--pool-runs"]) == 0
    assert "trial seeds repeat" in capsys.readouterr().err
    other = write_run(tmp_path / "c", [r | {"seed": r["seed"] + 1000} for r in two_trials("c")])
    warned.clear()
    load_records([a, other], warn=warned.append, overlap="pool")
    assert any("the runs' trial seeds differ" in w for w in warned) and not any("repeat" in w for w in warned)
    assert power_main([str(a), str(b), "--pool-runs"]) == 0
    power_out = capsys.readouterr().out
    none = next(line.split() for line in power_out.splitlines() if line.split()[:1] == ["none"])
    assert none[1].endswith("×4")  # strategy, tasks×k: power and tables agree on the pooled trials


def test_runs_with_different_episodes_combine_without_pooling(tmp_path):
    a = write_run(tmp_path / "a", [r for r in two_trials("a") if r["strategy"] == "none"])
    b = write_run(tmp_path / "b", [r for r in two_trials("b") if r["strategy"] == "full"])
    df = load_records([a, b])
    assert len(df) == 16 and "trial_in_run" not in df


def test_the_same_run_given_twice_is_refused(tmp_path, capsys):
    a = write_run(tmp_path / "a", two_trials("a"))
    with pytest.raises(RunsOverlap, match="given twice"):
        load_records([a, a])
    with pytest.raises(RunsOverlap, match="given twice"):
        load_records([tmp_path, a], overlap="pool")  # a run inside a given parent: refused even when pooling
    assert table_main([str(a), str(a / "results.jsonl")]) == 2
    assert "given twice" in capsys.readouterr().err


def test_make_passes_the_view_and_pool_options():
    out = subprocess.run(["make", "-n", "tables", "table", "power", "RUNS=runs/x", "EXCLUDE=infra", "POOL=1"],
                         cwd=ROOT, capture_output=True, text=True, check=True).stdout
    lines = [line for line in out.splitlines() if "-m analysis." in line or "--pool-runs" in line]
    joined = " ".join(out.split())
    assert "analysis.table runs/x --exclude infra --pool-runs" in joined
    assert "--exclude infra --pool-runs" in joined.split("analysis.tables", 1)[1]
    assert "analysis.power runs/x --pool-runs" in joined and lines


def test_end_of_job_line_warns_when_infra_rates_differ(tmp_path, capsys):
    from harness.run import report_job
    from harness.runner.infra_balance import infra_warning
    from harness.store import RunStore

    run = write_run(tmp_path / "run", two_trials("run", infra_in_full=2))
    job = "tau2_retail/test/m/full"
    summary = {"job": job, "ran": 8, "skipped": 0, "errors": {"infra": 2}, "run_dir": str(run),
               "infra_warning": infra_warning(RunStore(run).read(), job)}  # what the job loop's summary carries
    report_job(summary)
    out, err = capsys.readouterr()
    assert "errors: infra 2 (each a failed episode, infra too: tau2-bench's leaderboard convention)" in out
    assert all(len(line) <= 160 for line in out.splitlines())  # a terminal's width
    assert ("memdeliv: warning: tau2_retail/test/m: infra errors differ between strategies so far (none 0/8, "
            "full 2/8)") in err
    write_run(run, two_trials("run"))  # no infra anywhere: no warning
    report_job({**summary, "errors": {}, "infra_warning": infra_warning(RunStore(run).read(), job)})
    assert "differ" not in capsys.readouterr().err


def test_the_html_report_names_the_view(tmp_path):
    from analysis.report import main as report_main

    run = write_run(tmp_path / "run", two_trials("run", infra_in_full=1))
    assert report_main([str(run), "--no-plots", "--out", str(tmp_path / "a.html")]) == 0
    assert "Rates: infra errors counted as failures (tau2-bench leaderboard convention)" in (tmp_path / "a.html").read_text()
    assert report_main([str(run), "--no-plots", "--exclude", "infra", "--out", str(tmp_path / "b.html")]) == 0
    page = (tmp_path / "b.html").read_text()
    assert "Rates: EXCLUDING infra errors (non-default view)" in page and "infra errors differ" in page


@pytest.mark.parametrize("command", ["table", "power", "noise_floor"])
def test_a_run_with_no_records_exits_2_naming_it(command, tmp_path, capsys):
    import importlib

    (tmp_path / "results.jsonl").write_text("")
    assert importlib.import_module(f"analysis.{command}").main([str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip() == f"memdeliv {command}: no records found under {tmp_path}"
