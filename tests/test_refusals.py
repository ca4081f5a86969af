"""Refusals as a user meets them through make: one line, exit 2, and every analysis command's line starts with the
same prefix, `memdeliv <target>:` (analysis.fmt.refuse; argparse's own usage block never shows)."""

from __future__ import annotations

import os
import re
import subprocess

import pytest

from conftest import HUNG_S, REPO, unwrapped


def make(*args: str) -> subprocess.CompletedProcess:
    """`make <args>` in the checkout as a user's shell starts it (not as a sub-make of `make test`, whose variables
    would reach it), the venvs not rebuilt (-o setup); stderr without make's own `***` line."""
    env = {k: v for k, v in os.environ.items() if k not in ("MAKELEVEL", "MAKEFLAGS", "MFLAGS", "MAKEOVERRIDES")}
    proc = subprocess.run(["make", "--no-print-directory", "-o", "setup", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=HUNG_S, env=env)
    proc.stderr = unwrapped("".join(line for line in proc.stderr.splitlines(keepends=True)
                                    if not re.match(r"make(\[\d+\])?: \*\*\*", line)))
    return proc


@pytest.mark.parametrize("target", ["table", "tables", "recommend", "power", "report", "view"])
def test_a_missing_run_is_one_line_with_the_shared_prefix(target, tmp_path):
    proc = make(target, f"RUNS={tmp_path}/nope")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stdout == ""  # make echoes no command line (nor a stray `\` line of its continuations)
    assert proc.stderr == f"memdeliv {target}: no run directory or results.jsonl at {tmp_path}/nope\n"


def test_a_margin_that_is_no_number_is_one_line_naming_it(tmp_path):
    proc = make("recommend", f"RUNS={tmp_path}/nope", "DELTA=abc")
    assert proc.returncode == 2 and proc.stdout == "", proc.stdout + proc.stderr
    assert proc.stderr == ("memdeliv recommend: argument --delta: expected a number of points above 0, e.g. 5 "
                           "(make: DELTA=5); got 'abc'\n")


def test_a_stray_comma_in_strategies_is_one_line_naming_it(tmp_path):
    proc = make("sweep", "MODEL=simulated", "STRATEGIES=none,", "RUN=refused", f"ARGS=runs_dir={tmp_path}")
    assert proc.returncode == 2 and proc.stdout == "", proc.stdout + proc.stderr
    assert proc.stderr == ("memdeliv: config error: strategy=none,: an empty name in the comma list (a stray comma); "
                           "expected names separated by single commas, e.g. strategy=none\n")
    assert not (tmp_path / "refused").exists()


@pytest.mark.parametrize("target", ["recommend", "report"])
def test_no_run_named_asks_for_runs_naming_the_latest_not_a_timestamp(target, tmp_path):
    """Neither RUNS= nor RUN= given: the Makefile's RUN default is the time now, a directory nobody made; the
    command asks for RUNS= and names the latest run here (runs/<run>/results.jsonl changed last), or says there is
    none."""
    import sys
    import time

    def run() -> subprocess.CompletedProcess:
        proc = subprocess.run(["make", "--no-print-directory", "-s", "-o", "setup", "-f", str(REPO / "Makefile"),
                               target, f"PY={sys.executable}"], cwd=tmp_path, capture_output=True, text=True,
                              timeout=HUNG_S, env={**os.environ, "PYTHONPATH": str(REPO)})
        return proc

    proc = run()
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.splitlines()[0] == (f"memdeliv {target}: which run? name it with RUNS=runs/<run> (several: "
                                           "RUNS=\"runs/a runs/b\"); runs/ holds none yet: `make sweep` makes one")
    for name, age in (("older", 100), ("newer", 10), ("memory", 1)):
        (tmp_path / "runs" / name).mkdir(parents=True)
        if name != "memory":  # a memory artifact's folder holds no results.jsonl
            (tmp_path / "runs" / name / "results.jsonl").write_text("")
            os.utime(tmp_path / "runs" / name / "results.jsonl", (time.time() - age,) * 2)
    assert unwrapped(run().stderr).splitlines()[0].endswith("; the latest here is RUNS=runs/newer")
