"""Benchmarks are plugins: the registry, the protocol's defaults, and a third benchmark from outside the repo.

tests/plugin_bench/ is a package as pip would install it (a module and its .dist-info with a
`memdeliv.benchmarks` entry point); putting it on PYTHONPATH is the whole install. No harness code names it.
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import pytest
from conftest import REPO, SAMPLE_MEMORY, main_in_process, read_records, run_cli
from harness import benchmarks
from harness.benchmarks import BenchmarkBase, registry
from harness.benchmarks.appworld.adapter import AppWorldBenchmark
from harness.benchmarks.tau2.adapter import Tau2Benchmark
from harness.config import section_settings
from harness.settings import BenchmarkSettings


def settings(**values):
    return section_settings(BenchmarkSettings, {"domain": values.get("name"), **values})

PLUGIN = REPO / "tests" / "plugin_bench"
# the sweeps run as processes of their own (run_cli): the benchmarks installed are what the environment holds, never
# what an earlier test registered in this process
WITH_PLUGIN = {"PYTHONPATH": os.pathsep.join(filter(None, [str(PLUGIN), os.environ.get("PYTHONPATH")]))}
SWEEP = ("model=oracle", "strategy=none,full", "benchmark=keywords", f"memory={SAMPLE_MEMORY}", "run_name=kw")


def test_built_ins_are_registered_through_the_entry_point_group():
    import importlib.metadata

    declared = {ep.name: ep.value for ep in importlib.metadata.entry_points(group="memdeliv.benchmarks")}
    assert declared["tau2_retail"] == declared["tau2_airline"] == declared["tau2_telecom"] \
        == "harness.benchmarks.tau2.adapter:Tau2Benchmark"
    assert declared["appworld"] == "harness.benchmarks.appworld.adapter:AppWorldBenchmark"
    assert benchmarks.adapter_class("tau2_airline") is Tau2Benchmark
    assert issubclass(Tau2Benchmark, BenchmarkBase) and issubclass(AppWorldBenchmark, BenchmarkBase)
    # the default layout is the adapter's own declaration, not a name test in the harness
    assert benchmarks.default_placement("appworld") == "first_user_message"
    assert benchmarks.default_placement("tau2_retail") == "after_policy"
    with pytest.raises(benchmarks.UnknownBenchmark, match="unknown benchmark 'nope'; available: appworld"):
        benchmarks.create(settings(name="nope"))


def test_an_adapter_missing_a_member_is_refused_and_base_defaults_are_no_ops(monkeypatch):
    class Bare:  # no BenchmarkBase: the optional members are missing
        def __init__(self, settings):
            self.settings, self.name = settings, settings.name

        def validate(self): ...

        def tasks(self): return []

        def run_episode(self, task, **kw): return {}

    class Based(BenchmarkBase, Bare):
        pass

    monkeypatch.setattr(registry._REGISTRY, "extra", {})  # registered for this test only
    benchmarks.register("bare_test", Bare)
    benchmarks.register("based_test", Based)
    with pytest.raises(TypeError, match="lacks placements, default_placement, task_set, identity_extra"):
        benchmarks.create(settings(name="bare_test"))
    built = benchmarks.create(settings(name="based_test", split="train"))
    assert (built.identity_extra(), built.manifest_facts(), built.cut_scenarios([]), built.needs_judge(),
            built.gold_solution(None), built.load_trajectory(Path("x"), {}), built.task_set, built.close()) \
        == ({}, {}, [], False, None, None, None, None)


def test_a_plugin_benchmark_without_a_yaml_is_unknown_until_installed(runs_dir):
    proc = run_cli(*SWEEP, runs_dir=runs_dir, multirun=True)
    assert proc.returncode == 2 and "keywords" in proc.stderr and not runs_dir.exists()


@pytest.fixture(scope="module")
def plugin_sweep(tmp_path_factory):
    runs_dir = tmp_path_factory.mktemp("plugin") / "runs"
    first = run_cli(*SWEEP, "benchmark.limit=2", runs_dir=runs_dir, multirun=True, env=WITH_PLUGIN)
    assert first.returncode == 0, first.stderr[-3000:]
    resumed = run_cli(*SWEEP, runs_dir=runs_dir, multirun=True, env=WITH_PLUGIN)  # the same run, all 4 tasks
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    return runs_dir / "kw", resumed.stdout  # the end-of-job lines


def test_plugin_sweep_records_every_episode_once_in_the_shared_shape(plugin_sweep):
    run_dir, _ = plugin_sweep
    records = read_records(run_dir)
    assert Counter((r["strategy"], r["task_id"]) for r in records) == \
        {(s, t): 1 for s in ("none", "full") for t in ("k1", "k2", "k3", "k4")}
    shared = {"task_id", "success", "reward", "termination", "error", "error_detail", "steps", "prompt_tokens",
              "memory_tokens", "wall_s", "task_text", "trajectory", "job", "placement"}
    assert all(shared <= set(r) and "_trajectory" not in r for r in records)
    wins = {(r["strategy"], r["task_id"]) for r in records if r["success"]}
    assert wins == {("full", "k1"), ("full", "k2"), ("full", "k3")}  # the sample memory never mentions zebras
    assert all((run_dir / r["trajectory"]).is_file() for r in records)
    assert {r["job"] for r in records} == {"keywords/test/memdeliv-scripted/oracle/none",
                                          "keywords/test/memdeliv-scripted/oracle/full"}


def test_plugin_sweep_resumes_past_what_it_recorded(plugin_sweep):
    _, stdout = plugin_sweep
    assert stdout.count("ran 2, resumed past 2") == 2, stdout[-2000:]


def test_plugin_runs_reach_the_tables(plugin_sweep):
    run_dir, _ = plugin_sweep
    proc = main_in_process("analysis.table", str(run_dir))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "keywords/test" in proc.stdout
    full = next(line for line in proc.stdout.splitlines() if " full " in line)
    assert "75.0%" in full
