"""`make selfcheck`: every retail-test and airline-test task solved by the scripted oracle via the real runner."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from conftest import HUNG_S


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
    assert re.fullmatch(r"selfcheck: (appworld: no data|appworld_dev (\d+)/\2)", lines[1]), lines
    assert len(lines) == 2
