"""Hydra's own launchers spread the jobs of a sweep: submitit (local here, SLURM on a cluster) and Ray."""

from __future__ import annotations

import shutil
import tempfile
from collections import Counter

import pytest

from conftest import SAMPLE_MEMORY, compose, read_records, run_cli

psutil = pytest.importorskip("psutil")


def _sweep(runs_dir, *launcher: str, env: dict | None = None):
    """The CLI as a process (run_cli): the launcher starts and ends its jobs' processes from it."""
    return run_cli(*launcher, "model=oracle", "strategy=none,full", f"memory={SAMPLE_MEMORY}", "benchmark.limit=1",
                   "run_name=sweep", runs_dir=runs_dir, multirun=True, env=env)


def test_submitit_local_runs_each_job_in_its_own_process(runs_dir):
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher")
    proc = _sweep(runs_dir, "hydra/launcher=submitit_local")
    assert proc.returncode == 0, proc.stderr[-3000:]
    records = read_records(runs_dir / "sweep")
    assert Counter(r["strategy"] for r in records) == {"none": 1, "full": 1}
    assert all(r["success"] and r["error"] is None for r in records)
    # each job printed its summary in its own submitit job's log, not in the launching process
    logs = [p.read_text() for p in (runs_dir / "sweep" / ".submitit").glob("*/*_log.out")]
    assert sorted(next(line.split(":")[1].split("/")[-1] for line in log.splitlines() if line.startswith("memdeliv:"))
                  for log in logs) == ["full", "none"]
    assert "memdeliv:" not in proc.stdout


def test_ray_launcher_runs_jobs_as_ray_tasks_and_leaves_nothing(runs_dir):
    pytest.importorskip("hydra_plugins.hydra_ray_launcher")
    temp = tempfile.mkdtemp(prefix="mdray")  # short: Ray's socket paths live under it
    try:
        # one CPU: the two jobs run one after the other in a single Ray worker (a small cluster under any load)
        proc = _sweep(runs_dir, "hydra/launcher=ray", "+hydra.launcher.ray.init.num_cpus=1",
                      "+hydra.launcher.ray.init.include_dashboard=false", f"+hydra.launcher.ray.init._temp_dir={temp}",
                      env={"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"})  # Ray on 127.0.0.1 only (docs/scaling.md)
        assert proc.returncode == 0, proc.stderr[-3000:]
        records = read_records(runs_dir / "sweep")
        assert Counter(r["strategy"] for r in records) == {"none": 1, "full": 1}
        assert all(r["success"] for r in records)
        # each job's end-of-job line came from a Ray worker (Ray prefixes every line a worker prints)
        job_lines = [line for line in (proc.stdout + proc.stderr).splitlines()
                     if "(_run_job pid=" in line and "memdeliv: tau2_retail/" in line]
        assert sorted(line.split(": ran ")[0].rsplit("/", 1)[-1] for line in job_lines) == ["full", "none"]
        left = []
        for p in psutil.process_iter(["cmdline"]):
            if temp in " ".join(p.info["cmdline"] or []):
                left.append(p.pid)
        assert not left, f"Ray processes of the launcher left behind: {left}"
    finally:
        shutil.rmtree(temp, ignore_errors=True)


def test_slurm_launcher_config_composes_for_submitit(tmp_path):
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher")
    from hydra import compose as hydra_compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.utils import instantiate

    from harness.config import CONFIG_DIR

    compose("model=oracle")  # registers our schemas as the CLI does
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=CONFIG_DIR, version_base=None):
        cfg = hydra_compose(config_name="config", overrides=["model=oracle", "hydra/launcher=slurm",
                                                            "hydra.launcher.partition=cpu",
                                                            f"hydra.sweep.dir={tmp_path}"],
                            return_hydra_config=True)
    GlobalHydra.instance().clear()
    launcher = instantiate(cfg.hydra.launcher)
    assert type(launcher).__name__ == "SlurmLauncher"
    assert {k: launcher.params[k] for k in ("partition", "timeout_min", "cpus_per_task", "mem_gb")} == \
        {"partition": "cpu", "timeout_min": 720, "cpus_per_task": 4, "mem_gb": 16}
