"""Where a job's episodes run: a thread pool in this process (default) or one Ray task per episode.

The runner hands an executor the (task, trial) pairs to run and the job's `EpisodeRunner` (harness/runner/episode.py);
the executor yields each finished (record, trajectory). Whatever the executor, this process stays the only writer of
the run directory: a Ray worker runs the episode with a scratch directory of its own and returns the
record and the trajectory file's bytes; the driver writes the file, then the runner appends the record.
So a cluster needs no shared filesystem and no cross-node file locks. docs/scaling.md has the user's view.
"""

from __future__ import annotations

import atexit
import logging
import math
import os
import pickle
import re
import shutil
import sys
import tempfile
import uuid
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from harness.record_fields import TRAJECTORY
from harness.records import Finished
from harness.store import now_iso, redact_text
from strategies.atomic import write_text_atomic

EXECUTORS = ("threads", "ray")
STOP = "_provider_unusable"  # what a Ray worker returns instead of a record when the job must stop
_HOST_PORT = re.compile(r"^[\w.\-]+:\d{1,5}$")


def check_options(ex: Any) -> None:
    """Semantic checks of `executor.*` (the schema already refused unknown keys and wrong types)."""
    if ex.name not in EXECUTORS:
        raise ValueError(f"executor.name={ex.name!r}; valid: {', '.join(EXECUTORS)}")
    if ex.name == "threads":
        ray_only = {"address": ex.address is not None, "num_cpus": ex.num_cpus is not None,
                    "cpus_per_episode": ex.cpus_per_episode != 1.0, "max_retries": ex.max_retries != 1}
        set_keys = [k for k, given in ray_only.items() if given]
        if set_keys:
            raise ValueError(f"executor.{set_keys[0]} applies to executor=ray only (threads use `concurrency`)")
        return
    address = ex.address
    if address is not None and address != "auto" and not address.startswith("ray://") \
            and not _HOST_PORT.match(address):
        raise ValueError(f"executor.address={address!r}; valid: null (a local Ray on 127.0.0.1), auto, "
                         "ray://host:port, host:port")
    if ex.num_cpus is not None and ex.num_cpus < 1:
        raise ValueError(f"executor.num_cpus must be >= 1, got {ex.num_cpus}")
    if ex.num_cpus is not None and address is not None:
        raise ValueError("executor.num_cpus sizes the local Ray only (address: null); a cluster has its own")
    if not ex.cpus_per_episode > 0:
        raise ValueError(f"executor.cpus_per_episode must be > 0, got {ex.cpus_per_episode}")
    if ex.max_retries < 0:
        raise ValueError(f"executor.max_retries must be >= 0, got {ex.max_retries}")
    try:
        import ray  # noqa: F401
    except ImportError:
        raise ValueError("executor=ray needs the ray package: run `make setup`") from None


def create(cfg: Any, *, learns_online: bool) -> "ThreadsExecutor | RayExecutor":
    if cfg.executor.name == "ray" and learns_online:
        print(f"memdeliv: strategy {cfg.strategy.name} learns online: each update must see the episodes before "
              "it, one at a time, so this job runs on threads in this process (executor=ray is for strategies "
              "that do not learn during the run)", file=sys.stderr)
        return ThreadsExecutor(cfg.concurrency)
    if cfg.executor.name == "ray":
        return RayExecutor(cfg)
    return ThreadsExecutor(cfg.concurrency)


class ThreadsExecutor:
    name = "threads"

    def __init__(self, concurrency: int):
        self.concurrency = max(1, int(concurrency))

    def run(self, todo: list[tuple[Any, int]], episodes: Any, served: dict[str, Any]) -> Iterator[Finished]:
        pool = ThreadPoolExecutor(max_workers=self.concurrency)
        try:
            futures = [pool.submit(episodes, task, trial) for task, trial in todo]
            for fut in as_completed(futures):
                yield fut.result()
        except BaseException:  # Ctrl-C or the consumer failed: what is recorded stays recorded
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        pool.shutdown(wait=True)


# ---------------------------------------------------------------------------------------------- Ray: driver


@dataclass
class RayJob:
    """What a worker needs to run episodes of one job; shipped once per job (ray.put)."""

    cfg: Any  # the job's DictConfig, interpolations unresolved (secrets are resolved from the worker's env)
    served: dict[str, Any]  # ModelSpec.served_kwargs() of the driver (a managed local server's address)
    token: str  # one per job run: a worker's cached context belongs to exactly one


class WorkerSetupError(RuntimeError):
    """A worker could not build the job (strategy, benchmark, model): a problem of the node, not an episode."""


_started: dict[str, Any] = {}  # the local Ray this process started, and with which options


def ray_up(ex: Any) -> Any:
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


class RayExecutor:
    name = "ray"

    def __init__(self, cfg: Any):
        self.cfg = cfg
        self.ex = cfg.executor

    def run(self, todo: list[tuple[Any, int]], episodes: Any, served: dict[str, Any]) -> Iterator[Finished]:
        ray = ray_up(self.ex)
        job = ray.put(RayJob(cfg=self.cfg, served=dict(served), token=uuid.uuid4().hex))
        remote = ray.remote(_episode_in_worker)
        opts = {"num_cpus": float(self.ex.cpus_per_episode), "max_retries": int(self.ex.max_retries),
                "retry_exceptions": False}  # Ray reruns an episode only when its worker died, never on an error
        pending: dict[Any, tuple[Any, int, str]] = {}
        for task, trial in todo:  # named tasks: `ps` shows ray::episode:<task>:t<trial> for each running one
            blob = pickle.dumps(task)  # unpickled in the worker after worker_setup(): see there
            ref = remote.options(name=f"episode:{task.id}:t{trial}", **opts).remote(job, blob, trial)
            pending[ref] = (task, trial, now_iso())
        try:
            while pending:
                ready, _ = ray.wait(list(pending), num_returns=1)
                for ref in ready:
                    task, trial, submitted = pending.pop(ref)
                    yield self._collect(ray, ref, episodes, task, trial, submitted), None  # no trajectory
        finally:
            for ref in pending:  # Ctrl-C or the consumer failed: stop what is still queued or running
                ray.cancel(ref, force=True)

    def _collect(self, ray: Any, ref: Any, episodes: Any, task: Any, trial: int, submitted: str) -> dict[str, Any]:
        try:
            record, payload = ray.get(ref)
        except WorkerSetupError:
            raise  # the job cannot run on this cluster: stop it loudly (episodes recorded so far stay)
        except ray.exceptions.RayTaskError as exc:  # an exception escaped the episode code: a harness bug
            print(f"memdeliv: HARNESS ERROR in a Ray worker, task {task.id} trial {trial}: {exc}", file=sys.stderr)
            return episodes.failed(task, trial, "harness", f"ray task raised: {exc}", submitted)
        except ray.exceptions.RayError as exc:  # the worker process (or its node) died, also on the retry
            detail = f"ray worker died (after {int(self.ex.max_retries)} rerun(s)): {type(exc).__name__}: {exc}"
            return episodes.failed(task, trial, "infra", detail[:1000], submitted)
        if STOP in record:
            from harness.serving.model_client import ProviderUnusable

            raise ProviderUnusable(record[STOP])
        if payload is not None and record.get(TRAJECTORY):
            write_trajectory(episodes.root / record[TRAJECTORY], payload)
        return record


def write_trajectory(path: Path, payload: bytes) -> None:
    """The driver's copy of a worker's trajectory file (redacted again here, where every secret is known)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, redact_text(payload.decode("utf-8")))


# ---------------------------------------------------------------------------------------------- Ray: worker

_context: dict[str, Any] = {}  # "job" -> (token, EpisodeRunner) of this worker process (one job at a time)


def worker_setup() -> None:
    """Before a worker first unpickles a task (which imports tau2), quiet what the driver quiets at import."""
    if _context.get("setup"):
        return
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no network fetch of LiteLLM's price map
    from loguru import logger

    logger.remove()  # as harness/benchmarks/tau2/runtime.py does in-process: tau2 logs at import and every step
    _context["setup"] = True


def _episode_in_worker(job: RayJob, task_blob: bytes, trial: int) -> tuple[dict[str, Any], bytes | None]:
    worker_setup()
    task = pickle.loads(task_blob)
    token, episodes = _context.get("job", (None, None))
    if token != job.token:
        episodes = _build_in_worker(job)
    from harness.serving.model_client import ProviderUnusable

    try:
        record, _ = episodes(task, trial)  # the trajectory: only online learners need it, and they never run on Ray
    except ProviderUnusable as exc:  # bad key / unknown model: handed to the driver as data; it stops the job
        return {STOP: str(exc)}, None
    payload = None
    if record.get(TRAJECTORY):
        path = episodes.root / record[TRAJECTORY]
        payload = path.read_bytes()
        path.unlink()
    return record, payload


def _build_in_worker(job: RayJob) -> Any:
    """The strategy, benchmark and model of a job, built once per worker process from the driver's config."""
    _, previous = _context.pop("job", (None, None))
    if previous is not None:  # e.g. AppWorld engines of the last job
        previous.bench.close()
    try:
        from harness import benchmarks
        from harness.ledger import MemoryTokenCounter
        from harness.serving.models import ModelSpec
        from harness.runner.episode import EpisodeRunner, build_strategy

        cfg = job.cfg
        model = ModelSpec(cfg.model, **job.served)
        # artifacts_dir=None: a worker never writes the run directory (learning strategies stay on the driver)
        strategy = build_strategy(cfg, model, artifacts_dir=None)
        bench = benchmarks.create(cfg.benchmark)
    except Exception as exc:
        raise WorkerSetupError(f"a Ray worker on {os.uname().nodename} could not build the job: "
                               f"{type(exc).__name__}: {exc}") from exc
    scratch = Path(tempfile.mkdtemp(prefix="memdeliv-ray-"))
    atexit.register(shutil.rmtree, scratch, True)
    episodes = EpisodeRunner(cfg, bench, model, strategy, MemoryTokenCounter(model.name), scratch)
    _context["job"] = (job.token, episodes)
    return episodes
