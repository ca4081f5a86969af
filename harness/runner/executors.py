"""Where a job's episodes run: a thread pool in this process (default), one Ray task per episode
(harness/runner/ray_executor.py), or, for an online learner, its learning streams (harness/runner/streams.py):
one per trial, side by side, each in order, when its declaration says `trial_streams`; else one stream, in order.

The runner hands an executor the (task, trial) pairs to run, the job's `EpisodeRunner`
(harness/runner/episode.py), the budget (which decides in this process which episode may start) and `after`,
what becomes of an episode's outcome before the next episode of its stream starts (the attempt number, an online
learner's update). Every executor yields each episode's finished `Outcome` (harness/records.py) as it ends.
Whatever the executor, this process stays the only writer of the run directory. docs/scaling.md has the user's
view.
"""

from __future__ import annotations

import pickle
import sys
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Any, Callable, Generator, Optional, Union

from harness.benchmarks.protocol import Task
from harness.records import Episodes, Outcome
from harness.runner.budget import Budget
from harness.runner.job import Job
from harness.runner.ray_executor import RayExecutor
from harness.runner.streams import StreamsExecutor
from strategies import Strategy

EXECUTORS = ("threads", "ray")
After = Callable[[Outcome], Outcome]


def create(job: Job, strategy: Strategy, served: dict[str, Any]) -> "Executor":
    """The job's executor: `executor.name` for a strategy that does not learn during the run; an online learner's
    streams otherwise (on Ray too when its trial views can travel to a worker)."""
    concurrency = job.settings.concurrency
    if not job.capabilities.learns_online:
        return RayExecutor(job, served) if job.executor == "ray" else ThreadsExecutor(concurrency)
    if not job.capabilities.trial_streams:  # one learning stream: every update must see all the episodes before it
        if job.executor == "ray" or concurrency > 1:
            print(f"memdeliv: strategy {job.strategy_name} learns online in one stream: each update must see the "
                  "episodes before it, so this job runs its episodes one at a time, in order, in this process",
                  file=sys.stderr)
        return InOrderExecutor()
    if job.executor == "ray" and not _travels(strategy):
        print(f"memdeliv: strategy {job.strategy_name}: its trial view cannot be sent to a Ray worker (it does not "
              "pickle), so its streams run in threads of this process", file=sys.stderr)
        return StreamsExecutor(job, strategy, served, ray=False)
    return StreamsExecutor(job, strategy, served, ray=job.executor == "ray")


def _travels(strategy: Strategy) -> bool:
    if strategy.state is not None:  # its streams travel as data (harness/runner/stream_state.py)
        return True
    try:
        pickle.dumps(strategy.for_trial(0))
    except Exception:
        return False
    return True


def _same(outcome: Outcome) -> Outcome:
    return outcome


class ThreadsExecutor:
    name = "threads"

    def __init__(self, concurrency: int):
        self.concurrency = max(1, int(concurrency))

    def run(self, todo: list[tuple[Task, int]], episodes: Episodes, budget: Optional[Budget] = None,
            after: After = _same) -> Generator[Outcome, None, None]:
        start = budget.gate(episodes) if budget is not None else episodes

        def one(task: Task, trial: int) -> Outcome:
            outcome = start(task, trial)
            return after(outcome) if outcome.row is not None else outcome

        pool = ThreadPoolExecutor(max_workers=self.concurrency)
        try:
            futures = [pool.submit(one, task, trial) for task, trial in todo]
            for fut in as_completed(futures):
                yield fut.result()
        except BaseException:  # Ctrl-C or the consumer failed: what is recorded stays recorded
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        pool.shutdown(wait=True)


class InOrderExecutor:
    """An online learner with one stream: strictly in order in the consumer's thread (trial 0's tasks, then trial
    1's...), each started only after the previous one's update, so each sees the memory the previous episode
    left; the task order is fixed whatever `concurrency` says."""

    name = "in order"

    def runner(self, episodes: Episodes) -> Episodes:
        """How one episode runs when the caller waits for it (an online learner's re-runs): right here."""
        return episodes

    def run(self, todo: list[tuple[Task, int]], episodes: Episodes, budget: Optional[Budget] = None,
            after: After = _same) -> Generator[Outcome, None, None]:
        start = budget.gate(episodes) if budget is not None else episodes
        for task, trial in todo:
            outcome = start(task, trial)
            yield after(outcome) if outcome.row is not None else outcome


Executor = Union[ThreadsExecutor, InOrderExecutor, RayExecutor, StreamsExecutor]
