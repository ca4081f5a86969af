"""Registry (entry points and plugins), memory artifacts, none/full delivery."""

from __future__ import annotations

import importlib.metadata
from dataclasses import dataclass
import sys

import pytest

from memory_kit.memory_file import load_memory, save_memory, MemoryFileError
import strategies
from strategies import Guideline, StepView, StrategyContext, TaskView
from conftest import SAMPLE_MEMORY, install_readme_plugin

TASK = TaskView(benchmark="tau2_retail", task_id="1", description="I want a refund")


def test_builtins_come_from_entry_points():
    names = {ep.name for ep in importlib.metadata.entry_points(group="memdeliv.strategies")}
    assert {"none", "full"} <= names
    assert {"none", "full"} <= set(strategies.available())


def test_unknown_strategy_lists_available():
    with pytest.raises(strategies.UnknownStrategy, match="available: .*full"):
        strategies.create("nope", StrategyContext())


def test_full_delivers_every_guideline_at_every_step():
    guidelines, meta = load_memory(SAMPLE_MEMORY)
    assert meta["kind"] == "sample" and "not learned" in meta["note"].lower()
    full = strategies.create("full", StrategyContext(memory_path=str(SAMPLE_MEMORY)))
    for index in range(3):
        d = full.deliver(TASK, StepView(index=index))
        assert d.ids == [g.id for g in guidelines]
        assert all(f"[{g.id}] {g.text}" in d.text for g in guidelines)
    assert strategies.create("none", StrategyContext()).deliver(TASK, StepView(0)).empty


def test_full_without_memory_says_how_to_give_one():
    with pytest.raises(ValueError, match="memory=<path>"):
        strategies.create("full", StrategyContext())


def test_memory_file_roundtrip_and_errors(tmp_path):
    g = Guideline(id="a", text="Do X", category="recovery", support=2, source_task_ids=("1", "2"))
    path = tmp_path / "m.jsonl"
    save_memory(path, [g], meta={"kind": "learned"})
    loaded, meta = load_memory(path)
    assert loaded == [g] and meta == {"kind": "learned"}
    path.write_text('{"id": "a", "text": "x", "category": "vibes"}\n')
    with pytest.raises(MemoryFileError, match=r"m.jsonl:1: category 'vibes'"):
        load_memory(path)
    path.write_text('{"id": "a", "text": "x"}\n{"id": "a", "text": "y"}\n')
    with pytest.raises(MemoryFileError, match=r":2: duplicate"):
        load_memory(path)


def test_plugin_package_is_found_through_its_entry_point(tmp_path, monkeypatch):
    """A third-party package declaring `memdeliv.strategies` is discovered with no change to this repo."""
    monkeypatch.syspath_prepend(str(install_readme_plugin(tmp_path)))
    assert "first_k" in strategies.available()
    plugin = strategies.create("first_k", StrategyContext(memory_path=str(SAMPLE_MEMORY)))
    delivery = plugin.deliver(TASK, StepView(index=0))
    assert delivery.ids == [g.id for g in load_memory(SAMPLE_MEMORY)[0][:2]]
    plugin = strategies.create("first_k", StrategyContext(options={"k": 3}, memory_path=str(SAMPLE_MEMORY)))
    assert len(plugin.deliver(TASK, StepView(index=0)).ids) == 3
    sys.modules.pop("my_plugin", None)


class OldOnline:
    """A strategy written against the protocol before capabilities were declared: no StrategyBase, its own
    `known_options` and hooks, found by the runner through attributes then."""

    name = "old_online"
    learns_online = True
    known_options = ("n",)
    seen: list = []

    def build(self, trajectories):
        return None

    def deliver(self, task, step):
        return strategies.EMPTY

    def update(self, trajectory):
        OldOnline.seen.append(trajectory)

    def record_facts(self, trajectory):
        return {"old_fact": 1}

    @classmethod
    def validate_options(cls, options):
        if options.get("n", 1) < 1:
            raise ValueError("old_online: n must be >= 1")

    @classmethod
    def create(cls, ctx):
        return cls()


def test_a_strategy_written_against_the_old_protocol_keeps_working():
    """Fitted once by strategies/compat.py: its declarations hold, the members it lacks get StrategyBase's
    defaults, and the harness calls every capability plainly."""
    strategies.register("old_online", OldOnline)
    strategies.register("old_plain", lambda ctx: OldOnline())
    try:
        assert strategies.known_options("old_online") == ("n",) and strategies.known_options("old_plain") == ()
        with pytest.raises(ValueError, match="n must be >= 1"):
            strategies.validate_options("old_online", {"n": 0})
        with pytest.raises(ValueError, match=r"'old_plain': unknown option\(s\) \['n'\]; it takes no options"):
            strategies.validate_options("old_plain", {"n": 2})
        built = strategies.create("old_online", StrategyContext())
        assert isinstance(built, strategies.Strategy) and strategies.learns_online("old_online", {})
        assert built.name == "old_online" and built.for_trial(1) is built and built.state is None
        assert built.learn("t") == {} and OldOnline.seen == ["t"]  # no learn(): its update() is the update
        assert built.record_facts(None) == {"old_fact": 1}
        assert not strategies.uses_ground_truth("old_online", {}) and strategies.uses_memory("old_online")
        # what a job asks every strategy class: no frame, its own memory
        old = strategies.declaration("old_online")
        assert strategies.delivered_frame("old_online", {}) is None and old.frame is None
        assert strategies.registry.memory_owner("old_online", {}, {}) == "old_online"
    finally:
        strategies.registry._REGISTRY.extra.pop("old_online", None)
        strategies.registry._REGISTRY.extra.pop("old_plain", None)


@dataclass(eq=False)
class OldUpdater(strategies.StrategyBase):
    """A StrategyBase plugin from before `learn` replaced `update`: it learns in update(trajectory) only."""

    name: str = "old_updater"
    learns_online: bool = True
    known_options = ("k",)
    seen: tuple = ()

    def deliver(self, task, step):
        return strategies.EMPTY

    def update(self, trajectory):
        self.seen = (*self.seen, trajectory)


def test_a_strategybase_plugin_that_learns_in_update_is_called_through_learn():
    """The protocol has one update, `learn`; strategies/compat.py calls an old plugin's `update` as its learn (the
    runner and a resume's replay call only `learn`), and its declarations still hold."""
    strategies.register("old_updater", OldUpdater)
    try:
        assert strategies.known_options("old_updater") == ("k",)
        built = strategies.create("old_updater", StrategyContext(options={"k": 1}))
        assert isinstance(built, strategies.Strategy) and strategies.learns_online("old_updater", {})
        assert built.name == "old_updater"
        assert built.learn("t1") == {} and built.learn("t2", None, None, 3) == {}
        assert built.inner.seen == ("t1", "t2") and built.for_trial(0) is built
        current = strategies.create("none", StrategyContext())  # a strategy of today is not wrapped
        assert type(current).__module__ == "strategies.none.strategy"
    finally:
        strategies.registry._REGISTRY.extra.pop("old_updater", None)


def test_a_factory_that_builds_no_strategy_is_refused_clearly():
    strategies.register("not_a_strategy", lambda ctx: object())
    try:
        with pytest.raises(TypeError, match="does not implement the Strategy protocol.*inherit strategies.StrategyBase"):
            strategies.create("not_a_strategy", StrategyContext())
    finally:
        strategies.registry._REGISTRY.extra.pop("not_a_strategy", None)
