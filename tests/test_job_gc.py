"""The job loop's collector setting (harness/runner/loop.py `long_lived_frozen`): what is alive when a job starts is
set aside for the job and handed back after it; a process that froze objects itself keeps them frozen."""

from __future__ import annotations

import gc

import pytest

from harness.runner.loop import long_lived_frozen


@pytest.fixture(autouse=True)
def unfrozen():
    gc.unfreeze()
    yield
    gc.unfreeze()


def test_a_job_freezes_what_is_alive_and_hands_it_back():
    with long_lived_frozen():
        assert gc.get_freeze_count() > 0
    assert gc.get_freeze_count() == 0


def test_a_process_that_froze_objects_itself_keeps_them_frozen():
    gc.freeze()  # e.g. a host that forks workers, or another job beside this one
    frozen = gc.get_freeze_count()
    with long_lived_frozen():
        pass
    assert gc.get_freeze_count() == frozen
