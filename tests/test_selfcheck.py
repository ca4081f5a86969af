"""`make selfcheck`: every retail-test and airline-test task solved by the scripted oracle via the real runner."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from conftest import HUNG_S

from harness.selfcheck import NO_APPWORLD_DATA, appworld_line


@pytest.mark.slow
def test_selfcheck_prints_exact_line_and_leaves_nothing_behind(tmp_path):
    work, temp = tmp_path / "work", tmp_path / "temp"
    work.mkdir(), temp.mkdir()
    proc = subprocess.run([sys.executable, "-m", "harness.selfcheck"], cwd=work, capture_output=True,
                          text=True, timeout=HUNG_S, env={**os.environ, "TMPDIR": str(temp)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert not any(work.iterdir()) and not any(temp.iterdir())  # no runs/ where it ran, its temporary runs gone
    lines = proc.stdout.strip().splitlines()
    assert lines[0] == "selfcheck: tau2_retail 40/40 tau2_airline 20/20"
    # AppWorld's line: its dev split all solved by the shipped gold code, or no data here (not a failure)
    assert lines[1] == NO_APPWORLD_DATA or re.fullmatch(r"selfcheck: appworld_dev (\d+)/\1", lines[1]), lines
    assert len(lines) == 2


def test_without_appworld_data_the_line_says_what_that_means(monkeypatch, tmp_path):
    from harness.benchmarks.appworld import adapter

    monkeypatch.setattr(adapter, "has_data", lambda root: False)
    monkeypatch.delenv("APPWORLD_DATA_BUNDLE", raising=False)
    assert appworld_line(tmp_path, "r") == (NO_APPWORLD_DATA, [])
    assert "not a failure" in NO_APPWORLD_DATA and "make appworld-data" in NO_APPWORLD_DATA
