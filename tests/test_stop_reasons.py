"""One way to stop (harness/records.py's `Stop`): each reason a job ends early is carried by the episode's
`Outcome` where an episode says it, and reaches the job's summary and manifest. Scripted oracle episodes (no
model); the stops are planted: a FAKE strategy raising what a provider or Ctrl-C raises, a FAKE price, a FAKE
unreachable endpoint."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace

import pytest

import strategies
from conftest import compose, read_records
from harness.records import Outcome
from harness.runner import executors, run_job
from harness.runner import episode as episode_module
from harness.runner.budget import Budget
from harness.runner.reach import FIRST
from harness.serving.faults import ProviderUnusable
from strategies import EMPTY, StrategyBase

TASKS = 4


@dataclass(eq=False)
class RaisesOnSecondTask(StrategyBase):
    """FAKE strategy: delivers nothing, then raises `what` at the first step of the second task it sees."""

    name: str = "raises_on_second"
    what: type = ProviderUnusable
    seen: tuple = ()

    def deliver(self, task, step):
        if task.task_id not in self.seen:
            self.seen = (*self.seen, task.task_id)
            if len(self.seen) == 2:
                raise self.what("fake-provider: refused the credentials (planted)")
        return EMPTY


@pytest.fixture(autouse=True)
def oracle_and_fakes():
    from harness.scripted.oracle import install

    install()
    strategies.register("stop_unusable", lambda ctx: RaisesOnSecondTask())
    strategies.register("stop_interrupted", lambda ctx: RaisesOnSecondTask(what=KeyboardInterrupt))
    yield
    for name in ("stop_unusable", "stop_interrupted"):
        strategies.registry._REGISTRY.extra.pop(name, None)


@pytest.fixture
def outcomes(monkeypatch):
    """Every Outcome the executor hands the loop, as the loop sees it."""
    seen: list[Outcome] = []
    create = executors.create

    def recording(*args, **kwargs):
        pool = create(*args, **kwargs)
        run = pool.run

        def run_recorded(*a, **k):
            for outcome in run(*a, **k):
                seen.append(outcome)
                yield outcome
        monkeypatch.setattr(pool, "run", run_recorded)
        return pool
    monkeypatch.setattr(executors, "create", recording)
    return seen


def job(runs_dir, name: str, strategy: str = "none", *extra: str):
    cfg = compose("model=oracle", f"benchmark.limit={TASKS}", "progress=false", "concurrency=1",
                  f"runs_dir={runs_dir}", f"run_name={name}", *extra)
    cfg = replace(cfg, strategy=replace(cfg.strategy, name=strategy))  # a fake registered by name, no config file
    summary = run_job(cfg)
    manifest = json.loads((runs_dir / name / "manifest.json").read_text())
    return summary, next(iter(manifest["jobs"].values())), read_records(runs_dir / name)


def test_the_budget_stops_the_outcome_and_the_job(runs_dir, outcomes, monkeypatch):
    monkeypatch.setattr("harness.runner.budget.episode_cost", lambda row: 1.0)  # FAKE price: $1 an episode
    summary, manifest, records = job(runs_dir, "budget", "none", "budget_usd=1.5")
    assert len(records) == 1 and summary["ran"] == 1  # the second would cross $1.50
    held = [o.stop for o in outcomes if o.stop is not None]
    assert len(held) == TASKS - 1 and {s.reason for s in held} == {"budget"}
    assert summary["stopped"]["reason"] == "budget" and "1 of 4 episodes" in summary["stopped"]["detail"]
    assert manifest["stopped"] == summary["stopped"] and manifest["budget"]["stopped"] is True


def test_an_unusable_provider_stops_the_outcome_and_the_job(runs_dir, outcomes):
    summary, manifest, records = job(runs_dir, "unusable", "stop_unusable")
    assert len(records) == 1 and summary["ran"] == 1  # the refused episode leaves no row
    assert [o.stop.reason for o in outcomes if o.stop is not None] == ["provider_unusable"]
    assert summary["stopped"] == {"reason": "provider_unusable",
                                  "detail": "fake-provider: refused the credentials (planted)"}
    assert manifest["stopped"] == summary["stopped"]


def test_an_unreachable_provider_stops_the_job_after_its_first_episodes(runs_dir, outcomes, monkeypatch):
    endpoint = "http://127.0.0.1:9/v1/chat/completions"
    monkeypatch.setattr(episode_module, "unreachable", lambda row, calls: endpoint)  # FAKE: none connected
    summary, manifest, records = job(runs_dir, "unreachable")
    assert len(records) == FIRST == summary["ran"] and all(o.unreachable == endpoint for o in outcomes)
    assert summary["stopped"]["reason"] == "provider_unreachable" and endpoint in summary["stopped"]["detail"]
    assert manifest["stopped"] == summary["stopped"]


def test_ctrl_c_stops_the_job_and_keeps_what_it_recorded(runs_dir, outcomes):
    summary, manifest, records = job(runs_dir, "interrupted", "stop_interrupted")
    assert len(records) == 1 and summary["ran"] == 1
    assert summary["stopped"] == {"reason": "interrupted", "detail": "Ctrl-C"} and manifest["stopped"] == \
        summary["stopped"]


def test_a_job_that_ran_to_its_end_names_no_stop(runs_dir):
    summary, manifest, records = job(runs_dir, "whole")
    assert len(records) == TASKS and "stopped" not in summary and "stopped" not in manifest


def test_the_budget_gate_says_its_reason_on_the_outcome():
    gate = Budget(0.0, []).gate(lambda task, trial: pytest.fail("a held episode must not run"))
    outcome = gate("t", 0)
    assert outcome.row is None and outcome.stop is not None and outcome.stop.reason == "budget"
