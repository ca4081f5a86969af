"""The second session of documented commands (tests/documented_session.py): the pages of PAGES_LATER, in a fresh copy
of their own, print lines of at most 160 columns and what they quote; a file of its own so that `make test` runs it
beside tests/test_documented_outputs.py's session (README.md and the pages before these)."""

from __future__ import annotations

import pytest
from documented_session import PAGES_LATER, QUOTES, Ran, printed_within_160_columns, quoted_is_printed, run_pages

pytestmark = pytest.mark.slow

MINE = [(page, marker) for page, marker in QUOTES if page in PAGES_LATER]


@pytest.fixture(scope="module")
def ran(tmp_path_factory) -> dict[str, Ran]:
    return run_pages(tmp_path_factory, later=True)[1]


def test_every_documented_command_of_these_pages_prints_at_most_160_columns(ran):
    assert ran and {where.split(":")[0] for where in ran} == set(PAGES_LATER)  # every page ran here
    printed_within_160_columns(ran)


@pytest.mark.parametrize("page, marker", MINE, ids=[f"{p}: {m[:30]}" for p, m in MINE])
def test_quoted_output_is_what_a_fresh_run_prints(ran, page, marker):
    quoted_is_printed(ran, page, marker)
