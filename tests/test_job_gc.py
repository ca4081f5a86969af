"""The job loop's collector setting (harness/runner/loop.py `long_lived_frozen`): what is alive when a job starts is
set aside for the job and handed back after it; a process that froze objects itself keeps them frozen."""

from __future__ import annotations

import gc

import pytest

from harness.runner.loop import long_lived_frozen


_unfreeze = gc.unfreeze  # the real one, for the fixture, whatever a test patches


@pytest.fixture(autouse=True)
def unfrozen():
    _unfreeze()
    yield
    _unfreeze()


def test_a_job_freezes_what_is_alive_and_hands_it_back():
    with long_lived_frozen():
        assert gc.get_freeze_count() > 0
    assert gc.get_freeze_count() == 0


def test_a_process_that_froze_objects_itself_keeps_them_frozen(monkeypatch):
    gc.freeze()  # e.g. a host that forks workers, or another job beside this one
    # Not a count compared before and after: a frozen object that dies (another thread's, the test worker's) leaves
    # the permanent generation, so the count can drop with nothing unfrozen. What must not happen is a call.
    calls: list[str] = []
    monkeypatch.setattr(gc, "freeze", lambda: calls.append("freeze"))
    monkeypatch.setattr(gc, "unfreeze", lambda: calls.append("unfreeze"))
    with long_lived_frozen():
        pass
    assert calls == []
    assert gc.get_freeze_count() > 0
