"""executor=ray: one Ray task per episode (docs/scaling.md).

The driver ships the `Job` once per job (ray.put); a worker builds the job's strategy, adapter and model from it
once per process and runs each episode with a scratch directory of its own. It returns the episode's `Outcome`
(harness/records.py) with the trajectory file's bytes; the driver writes the file, then the runner appends the
row, so this process stays the only writer of the run directory and a cluster needs no shared filesystem.

The driver also decides which episode may start: with a budget, it submits an episode only when the budget admits
it and keeps at most the Ray's slots in flight (`RayExecutor`); an online learner's streams send one episode at a
time per stream, each with the stream's view as it stands (`RayEpisodes`), and learn here.
"""

from __future__ import annotations

import atexit
import logging
import math
import os
import pickle
import shutil
import sys
import tempfile
import threading
import uuid
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Generator, Optional

from harness.benchmarks.protocol import Task
from harness.errors import HARNESS, INFRA
from harness.records import Outcome
from harness.runner.budget import Budget
from harness.runner.job import Job
from foundation.atomic import write_text_atomic
from harness.secrets import redact_text
from harness.settings import ExecutorSettings
from harness.store import now_iso
from strategies import Strategy

if TYPE_CHECKING:
    from harness.runner.episode import EpisodeRunner


# ---------------------------------------------------------------------------------------------- the driver


@dataclass
class RayJob:
    """What a worker needs to run episodes of one job; shipped once per job (ray.put)."""

    job: Job  # without its adapter (a worker builds its own); a secret in its settings is read from the worker's env
    served: dict[str, Any]  # ModelSpec.served_kwargs() of the driver (a managed local server's address)
    token: str  # one per job run: a worker's cached context belongs to exactly one


class WorkerSetupError(RuntimeError):
    """A worker could not build the job (strategy, benchmark, model): a problem of the node, not an episode."""


_started: dict[str, Any] = {}  # the local Ray this process started, and with which options


def ray_up(ex: ExecutorSettings) -> Any:
    """Connect to (or start) the Ray of `executor`; a local one is started once per process and reused."""
    import ray

    want = (ex.address, ex.num_cpus, ex.cpus_per_episode)
    if ray.is_initialized():
        if not _started or _started.get("options") == want:
            return ray  # ours already, or someone else's (e.g. inside a hydra-ray-launcher job): use it
        ray_down()
    quiet = logging.WARNING
    if ex.address is None:
        # Ray binds its servers on every interface unless it runs as a single-machine "cluster"; this switch
        # (named for Windows/macOS, read by Ray on Linux too) keeps the GCS, raylet and workers on 127.0.0.1.
        from ray._private import ray_constants

        was = ray_constants.ENABLE_RAY_CLUSTER
        # Ray 2.60 turns token authentication on for a new local cluster (kept: the safer default) and logs a
        # WARNING that it did, at every start; that notice alone is muted here (docs/scaling.md)
        auth_log = logging.getLogger("ray._private.authentication.authentication_token_setup")
        auth_level = auth_log.level
        auth_log.setLevel(logging.ERROR)
        os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"  # read by the processes ray.init starts
        ray_constants.ENABLE_RAY_CLUSTER = False  # and by this one, which imported ray before the variable was set
        try:
            # keep a worker per episode slot alive between jobs (Ray's default ends idle ones beyond num_cpus,
            # and fractional cpus_per_episode then pays a fresh tau2 import per worker at every job)
            slots = math.ceil((ex.num_cpus or os.cpu_count() or 1) / float(ex.cpus_per_episode))
            ray.init(address="local", num_cpus=ex.num_cpus, include_dashboard=False, logging_level=quiet,
                     _node_ip_address="127.0.0.1", _system_config={"num_workers_soft_limit": slots})
        finally:
            os.environ.pop("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", None)
            ray_constants.ENABLE_RAY_CLUSTER = was
            auth_log.setLevel(auth_level)
        _started["options"] = want
    else:
        ray.init(address=ex.address, logging_level=quiet)
        _started["options"] = want
    return ray


def ray_down() -> None:
    """Stop the Ray this process started or joined (its own atexit hook does the same at exit)."""
    import ray

    if ray.is_initialized():
        ray.shutdown()
    _started.clear()


def ray_slots(ex: ExecutorSettings) -> int:
    """Episodes the Ray of `executor` runs at once: its CPUs / cpus_per_episode (a budget's wave, the streams)."""
    ray = ray_up(ex)
    return max(1, int(float(ray.cluster_resources().get("CPU", 1)) // float(ex.cpus_per_episode)))


class _Remote:
    """Submitting one episode as a Ray task, and reading its outcome back on the driver."""

    def __init__(self, job: Job, served: dict[str, Any]):
        self.job, self.ex = job, job.settings.executor
        self.ray = ray_up(self.ex)
        self.job_ref = self.ray.put(RayJob(job=job, served=dict(served), token=uuid.uuid4().hex))
        self.remote = self.ray.remote(_episode_in_worker)
        self.opts = {"num_cpus": float(self.ex.cpus_per_episode), "max_retries": int(self.ex.max_retries),
                     "retry_exceptions": False}  # Ray reruns an episode only when its worker died, never on an error

    def submit(self, task: Task, trial: int, rerun: int = 0, view: Optional[bytes] = None,
               state: Optional[dict[str, Any]] = None) -> Any:  # a Ray ObjectRef
        # named tasks: `ps` shows ray::episode:<task>:t<trial> for each running one
        name = f"episode:{task.id}:t{trial}" + (f":r{rerun}" if rerun else "")
        blob = pickle.dumps(task)  # unpickled in the worker after worker_setup(): see there
        return self.remote.options(name=name, **self.opts).remote(self.job_ref, blob, trial, rerun, view, state)

    def collect(self, ref: Any, episodes: EpisodeRunner, task: Task, trial: int, submitted: str) -> Outcome:
        ray = self.ray
        try:
            outcome = ray.get(ref)
        except WorkerSetupError:
            raise  # the job cannot run on this cluster: stop it loudly (episodes recorded so far stay)
        except ray.exceptions.RayTaskError as exc:  # an exception escaped the episode code: a harness bug
            print(f"memdeliv: HARNESS ERROR in a Ray worker, task {task.id} trial {trial}: {exc}", file=sys.stderr)
            return Outcome(row=episodes.failed(task, trial, HARNESS, f"ray task raised: {exc}", submitted))
        except ray.exceptions.RayError as exc:  # the worker process (or its node) died, also on the retry
            detail = f"ray worker died (after {int(self.ex.max_retries)} rerun(s)): {type(exc).__name__}: {exc}"
            return Outcome(row=episodes.failed(task, trial, INFRA, detail[:1000], submitted))
        if outcome.payload is not None and outcome.row is not None and outcome.row.get("trajectory"):
            write_trajectory(episodes.root / outcome.row["trajectory"], outcome.payload)
        return replace(outcome, payload=None)


class RayExecutor:
    """A job whose strategy does not learn during the run: its episodes as Ray tasks, finished ones yielded as
    they end. With a budget, the driver submits an episode only when the budget admits it, and never more than
    the Ray's slots at once: the sweep stops within one wave of episodes in flight (docs/cost.md)."""

    name = "ray"

    def __init__(self, job: Job, served: dict[str, Any]):
        self.job, self.served = job, served

    def run(self, todo: list[tuple[Task, int]], episodes: EpisodeRunner, budget: Optional[Budget] = None,
            after: Callable[[Outcome], Outcome] = lambda outcome: outcome) -> Generator[Outcome, None, None]:
        remote = _Remote(self.job, self.served)
        window = ray_slots(self.job.settings.executor) if budget is not None else max(1, len(todo))
        waiting = iter(todo)
        pending: dict[Any, tuple[Any, int, str]] = {}

        def top_up() -> None:  # the driver decides which episode may start
            while len(pending) < window:
                nxt = next(waiting, None)
                if nxt is None or (budget is not None and not budget.admit()):
                    return
                task, trial = nxt
                pending[remote.submit(task, trial)] = (task, trial, now_iso())

        top_up()
        try:
            while pending:
                ready, _ = remote.ray.wait(list(pending), num_returns=1)
                for ref in ready:
                    task, trial, submitted = pending.pop(ref)
                    outcome = remote.collect(ref, episodes, task, trial, submitted)
                    if budget is not None:
                        budget.finish(outcome.row)
                    top_up()  # before the row is written: keep the slots busy
                    yield after(outcome) if outcome.row is not None else outcome
        finally:
            for ref in pending:  # Ctrl-C or the consumer failed: stop what is still queued or running
                remote.ray.cancel(ref, force=True)


class RayEpisodes:
    """One episode as a Ray task that the calling thread waits for: an online learner's stream
    (harness/runner/streams.py) sends each episode, re-runs included, with its trial's view as it stands now
    (`strategy.for_trial(trial)`, pickled: a snapshot of the stream). The worker delivers from that view; the
    trajectory comes back for the learner, which stays on the driver."""

    def __init__(self, job: Job, served: dict[str, Any], strategy: Strategy, episodes: EpisodeRunner):
        self.remote = _Remote(job, served)
        self.strategy, self.episodes = strategy, episodes
        self._pending: set[Any] = set()
        self._lock = threading.Lock()

    def __call__(self, task: Task, trial: int, rerun: int = 0) -> Outcome:
        submitted = now_iso()
        kept = self.strategy.state  # a stream kept as data travels as data, else as its view
        state = kept.snapshot(trial) if kept is not None else None
        view = None if state is not None else pickle.dumps(self.strategy.for_trial(trial))
        ref = self.remote.submit(task, trial, rerun, view=view, state=state)
        with self._lock:
            self._pending.add(ref)
        try:
            outcome = self.remote.collect(ref, self.episodes, task, trial, submitted)
            if outcome.stream_state is not None and kept is not None:  # what the worker's deliver changed
                kept.restore(trial, outcome.stream_state)  # (retrieval synthesis)
            return replace(outcome, stream_state=None)
        finally:
            with self._lock:
                self._pending.discard(ref)

    def cancel(self) -> None:
        """Stop the episodes still queued or running (the job is stopping)."""
        with self._lock:
            for ref in self._pending:
                self.remote.ray.cancel(ref, force=True)


def write_trajectory(path: Path, payload: bytes) -> None:
    """The driver's copy of a worker's trajectory file (redacted again here, where every secret is known)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, redact_text(payload.decode("utf-8")))


# ---------------------------------------------------------------------------------------------- a worker

_context: dict[str, Any] = {}  # "job" -> (token, EpisodeRunner) of this worker process (one job at a time)


def worker_setup() -> None:
    """Before a worker first unpickles a task (which imports tau2), quiet what the driver quiets at import."""
    if _context.get("setup"):
        return
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no network fetch of LiteLLM's price map
    from loguru import logger

    logger.remove()  # as harness/benchmarks/tau2/runtime.py does in-process: tau2 logs at import and every step
    _context["setup"] = True


def _episode_in_worker(job: RayJob, task_blob: bytes, trial: int, rerun: int = 0,
                       view_blob: Optional[bytes] = None, state: Optional[dict[str, Any]] = None) -> Outcome:
    """view_blob: an online learner's trial view, pickled on the driver; state: its stream as data
    (Strategy.state), set on this worker's own strategy and sent back after the episode."""
    worker_setup()
    task = pickle.loads(task_blob)
    view = pickle.loads(view_blob) if view_blob is not None else None
    token, episodes = _context.get("job", (None, None))
    if token != job.token:
        episodes = _build_in_worker(job)
    kept = episodes.strategy.state
    if state is not None and kept is not None:
        kept.restore(trial, state)
        view = episodes.strategy.for_trial(trial)
    # a stop (bad key / unknown model) travels as data; the driver stops the job
    outcome = episodes(task, trial, rerun=rerun, view=view)
    if view is None:  # the trajectory object: only online learners (their streams send a view) need it
        outcome = replace(outcome, trajectory=None)
    if state is not None and kept is not None:
        outcome = replace(outcome, stream_state=kept.snapshot(trial))
    if outcome.row is None or not outcome.row.get("trajectory"):
        return outcome
    path = episodes.root / outcome.row["trajectory"]
    payload = path.read_bytes()
    path.unlink()
    return replace(outcome, payload=payload)


def _build_in_worker(job: RayJob) -> Any:
    """The strategy, benchmark and model of a job, built once per worker process from the driver's config."""
    _, previous = _context.pop("job", (None, None))
    if previous is not None:  # e.g. AppWorld engines of the last job
        previous.bench.close()
    try:
        from harness.serving.models import ModelSpec
        from harness.runner.episode import EpisodeRunner, build_strategy

        model = ModelSpec(job.job.settings.model, **job.served)
        # artifacts_dir=None: a worker never writes the run directory (learning strategies stay on the driver)
        strategy = build_strategy(job.job, model, artifacts_dir=None)
        bench = job.job.adapter()
    except Exception as exc:
        raise WorkerSetupError(f"a Ray worker on {os.uname().nodename} could not build the job: "
                               f"{type(exc).__name__}: {exc}") from exc
    scratch = Path(tempfile.mkdtemp(prefix="memdeliv-ray-"))
    atexit.register(shutil.rmtree, scratch, True)
    episodes = EpisodeRunner(job.job, bench, model, strategy, scratch)
    _context["job"] = (job.token, episodes)
    return episodes
