"""A plugin has the built-ins' powers through the same declaration: typed options checked before anything runs, a
plan estimate `make plan` prices, and online streams the harness commits with the run and restores on resume."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

import strategies
from strategies import EMPTY, Declaration, StrategyBase, StrategyContext, option
from strategies.base import trial_of
from strategies.declaration import always
from strategies.plan_block import PlanEstimate


@dataclass(frozen=True)
class CountingOptions:
    step: int = option(1, min=1)
    label: str = option("plain", choices=("plain", "fancy"))


def counted(memory, count, opts):
    return PlanEstimate(float(10 * opts.step), "declared by the plugin", {"counter": 1.0})


@dataclass(eq=False)
class Counting(StrategyBase):
    """Counts, per trial stream, the episodes it learned from (times its `step`)."""

    name: str = "counting_plugin"
    declaration = Declaration(options=CountingOptions, online=always, trial_streams=True, plan=counted)
    counts: dict = field(default_factory=dict)

    def deliver(self, task, step):
        return EMPTY

    def learn(self, trajectory, rerun=None, gold=None, samples=None):
        trial = trial_of(trajectory.episode)
        self.counts[trial] = self.counts.get(trial, 0) + self.typed_options().step
        return {"counted": self.counts[trial]}

    @property
    def state(self):
        return self

    def snapshot(self, trial):
        return {"count": self.counts.get(trial, 0)}

    def restore(self, trial, state):
        self.counts[trial] = state["count"]


@pytest.fixture
def plugin():
    strategies.register("counting_plugin", Counting)
    yield
    strategies.registry._REGISTRY.extra.pop("counting_plugin", None)


def test_a_plugin_declares_typed_options_a_plan_and_online_streams(plugin):
    assert strategies.known_options("counting_plugin") == ("step", "label")
    assert strategies.typed_options("counting_plugin", {"step": 3}) == CountingOptions(step=3)
    for bad, said in [({"step": 0}, "option step must be >= 1, got 0"), ({"step": "2"}, "must be an integer"),
                      ({"label": "odd"}, "label='odd'; valid: plain, fancy"), ({"stpe": 2}, "did you mean 'step'")]:
        with pytest.raises(ValueError, match=said):
            strategies.validate_options("counting_plugin", bad)
    assert strategies.learns_online("counting_plugin", {}) and strategies.trial_streams("counting_plugin")
    from analysis.planning.plan_estimate import memory_block_tokens

    estimate = memory_block_tokens("counting_plugin", None, "openai/gpt-4.1", {"step": 2})
    assert estimate == (20.0, "declared by the plugin")


def test_the_harness_commits_a_plugins_streams_and_restores_them(plugin, tmp_path):
    from harness.runner.stream_state import StreamStates
    from harness.store import RunStore

    built = strategies.create("counting_plugin", StrategyContext(options={"step": 2}))
    assert isinstance(built, strategies.Strategy) and built.state is built
    states = StreamStates(built, RunStore(tmp_path), "job")
    episode = strategies.Trajectory(strategies.TaskView("b", "7", ""), (), None, None, episode="7#1")
    assert built.learn(episode) == {"counted": 2}
    states.commit(1, "7#1")
    resumed = strategies.create("counting_plugin", StrategyContext(options={"step": 2}))
    assert StreamStates(resumed, RunStore(tmp_path), "job").restore(["7#1"]) == 1
    assert resumed.state.snapshot(1) == {"count": 2} and resumed.state.snapshot(0) == {"count": 0}
