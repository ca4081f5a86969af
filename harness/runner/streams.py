"""An online learner's trial streams, side by side (a strategy that declares `trial_streams`, e.g. ace_online).

Each trial is an independent learning stream: it starts from the same memory and learns from its own episodes
only, in the job's fixed task order. So the streams run concurrently (up to `concurrency` with threads, up to the
Ray slots with executor=ray), while each stream's episodes run strictly in order: an episode starts only after
the previous episode of its stream has been through `after` (its update). The records and the memory each stream
learns are those of a serial run (tests/test_online_streams.py).

Under executor=ray each episode is a Ray task (ray_executor.RayEpisodes) carrying its stream's view as it stands
(a pickled `for_trial(trial)`), and the learning stays here, in the stream's thread: this process remains the only
writer of the run directory and of the learner's memory.
"""

from __future__ import annotations

import queue
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Callable, Generator, Optional

from harness.benchmarks.protocol import Task
from harness.records import Episodes, Outcome
from harness.runner.budget import Budget
from harness.runner.job import Job
from harness.runner.ray_executor import RayEpisodes, ray_slots
from strategies import Strategy

if TYPE_CHECKING:
    from harness.runner.episode import EpisodeRunner

_END = object()  # a stream's thread is done


class StreamsExecutor:
    def __init__(self, job: Job, strategy: Strategy, served: dict[str, Any], ray: bool):
        self.job, self.strategy, self.served, self.ray = job, strategy, served, ray
        self.name = "ray streams" if ray else "streams"  # the manifest's `executor`
        self._remote: Optional[RayEpisodes] = None

    def runner(self, episodes: EpisodeRunner) -> Episodes:
        """How one episode runs when the caller waits for it (a stream's episodes, a learner's re-runs): in the
        calling thread, or as a Ray task the thread waits for."""
        if not self.ray:
            return episodes
        if self._remote is None:
            self._remote = RayEpisodes(self.job, self.served, self.strategy, episodes)
        return self._remote

    def width(self) -> int:
        return ray_slots(self.job.settings.executor) if self.ray else max(1, self.job.settings.concurrency)

    def run(self, todo: list[tuple[Task, int]], episodes: EpisodeRunner, budget: Optional[Budget] = None,
            after: Callable[[Outcome], Outcome] = lambda outcome: outcome) -> Generator[Outcome, None, None]:
        streams: dict[int, list[Task]] = {}
        for task, trial in todo:  # trial-major, tasks in the job's order: each stream keeps that order
            streams.setdefault(trial, []).append(task)
        if not streams:
            return
        one = self.runner(episodes)
        start = budget.gate(one) if budget is not None else one
        out: queue.Queue = queue.Queue()
        stopping = threading.Event()

        def stream(trial: int, tasks: list[Task]) -> None:
            try:
                for task in tasks:
                    if stopping.is_set():
                        return
                    outcome = start(task, trial)
                    if outcome.row is not None:
                        if stopping.is_set():  # its row will not be written: learn nothing from it either
                            return
                        outcome = after(outcome)  # the update, before this stream's next episode starts
                    out.put(outcome)
                    if outcome.row is None:  # stopped (the budget, the provider): this stream ends here
                        return
            except BaseException as exc:  # handed to the consumer, who raises it
                out.put(exc)
            finally:
                out.put(_END)

        pool = ThreadPoolExecutor(max_workers=min(self.width(), len(streams)), thread_name_prefix="memdeliv-stream")
        for trial, tasks in streams.items():  # in trial order: with one slot, stream 0 whole, then stream 1...
            pool.submit(stream, trial, tasks)
        ended = 0
        try:
            while ended < len(streams):
                item = out.get()
                if item is _END:
                    ended += 1
                elif isinstance(item, BaseException):
                    raise item
                else:
                    yield item
        finally:  # Ctrl-C, a stop, or the consumer failed: no stream starts another episode
            stopping.set()
            if self._remote is not None:
                self._remote.cancel()
            pool.shutdown(wait=False, cancel_futures=True)
