"""The batch layer: one job = a benchmark's tasks x trials (job), one (task, trial) at a time (episode), run by
an executor (threads or Ray), with progress, online learning's re-runs and replay, and the infra-balance line.

`run_job` and `job_key` are the runner's API for the CLIs: `from harness.runner import run_job`."""

from __future__ import annotations

from harness.runner.episode import job_key
from harness.runner.job import run_job

__all__ = ["job_key", "run_job"]
