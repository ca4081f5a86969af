"""Experiment configs (configs/experiment/ibm_*.yaml) drive real sweeps and are validated before anything runs."""

from __future__ import annotations

import yaml

from analysis import load_records
from conftest import SAMPLE_MEMORY, compose, run_in_process

ORACLE = ["model.name=memdeliv-scripted/oracle", "model.scripted=true", "model.api_key_env=null",
          "model.max_retries=0"]


def test_experiment_composes_with_its_sweep_and_view():
    cfg = compose("+experiment=ibm_tau2")
    assert cfg.benchmark.trials == 4 and cfg.model.name == "openai/gpt-4.1"
    assert cfg.analysis["view"] == "ibm_tau2"


def test_experiment_sweep_runs_with_command_line_winning(runs_dir):
    proc = run_in_process("+experiment=ibm_tau2", *ORACLE, "strategy=none,full", "benchmark=tau2_retail",
                          "benchmark.limit=2", "benchmark.trials=2", f"memory={SAMPLE_MEMORY}", "run_name=exp",
                          runs_dir=runs_dir, multirun=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    df = load_records([runs_dir / "exp"])
    assert set(df["strategy"]) == {"none", "full [unknown provenance]"} and set(df["benchmark"]) == {"tau2_retail"}
    assert len(df) == 2 * 2 * 2 and set(df["trial"]) == {0, 1}  # trials=2 from the command line beat the 4
    jobs = yaml.safe_load((runs_dir / "exp" / "config.yaml").read_text())["jobs"]
    assert all(j["config"]["benchmark"]["agent"] == "react" for j in jobs.values())  # the experiment's sweep


def test_experiment_sweep_axes_are_validated_before_anything_runs(runs_dir):
    # an axis declared in hydra.sweeper.params (as experiments do), with one bad value: no job may run
    proc = run_in_process("+experiment=ibm_tau2", *ORACLE, f"memory={SAMPLE_MEMORY}", "run_name=exp",
                          "hydra.sweeper.params.strategy='none,no_such_strategy'", runs_dir=runs_dir, multirun=True)
    assert proc.returncode == 2 and "no_such_strategy" in proc.stderr
    assert not (runs_dir / "exp").exists()
