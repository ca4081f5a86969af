"""The batch layer: one resolved job (job.py: `Job`, `resolve`) = a benchmark's tasks x trials (loop.py), one
(task, trial) at a time (episode.py), run by an executor (threads, Ray, or an online learner's streams), with
progress, a budget, online learning's re-runs and replay, the stop for an unreachable provider, and the
infra-balance line.

`run_job`, `resolve` and `job_key` are the runner's API for the CLIs: `from harness.runner import run_job`.
`run_job` returns the job's summary; a job that stopped early names why in its `stopped` (harness/records.py's
`Stop`), which a caller that chains jobs reads (harness/run.py exits on it)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harness.runner.job import Job, job_key, resolve

if TYPE_CHECKING:
    from harness.runner.loop import run_job

__all__ = ["Job", "job_key", "resolve", "run_job"]


def __getattr__(name: str) -> Any:
    """`run_job` on first use: the loop imports LiteLLM (seconds), which a command line refused by its config
    check (harness/checks.py prepare) never needs."""
    if name == "run_job":
        from harness.runner.loop import run_job

        return run_job
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
