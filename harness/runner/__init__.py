"""The batch layer: one resolved job (job.py: `Job`, `resolve`) = a benchmark's tasks x trials (loop.py), one
(task, trial) at a time (episode.py), run by an executor (threads, Ray, or in order for online learners), with
progress, online learning's re-runs and replay, and the infra-balance line.

`run_job`, `resolve` and `job_key` are the runner's API for the CLIs: `from harness.runner import run_job`."""

from __future__ import annotations

from harness.runner.job import Job, job_key, resolve
from harness.runner.loop import run_job

__all__ = ["Job", "job_key", "resolve", "run_job"]
