"""A run directory written by the code before issue 34 (row schema 1, usage spelled into column names) loads
unchanged: `analysis.table` prints exactly what the schema-1 code prints for it (tests/fixtures/runs/README.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from analysis.table import main as table_main

FIXTURES = Path(__file__).parent / "fixtures"
RUN = FIXTURES / "runs" / "today_oracle_mixed"


@pytest.mark.parametrize("wide", [False, True])
def test_schema_1_fixture_run_prints_the_table_it_printed_then(wide, capsys):
    expected = (FIXTURES / "tables" / f"today_oracle_mixed{'_wide' if wide else ''}.txt").read_text()
    assert table_main([str(RUN), *(["--wide"] if wide else [])]) == 0
    assert capsys.readouterr().out == expected
