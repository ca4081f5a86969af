"""AppWorld adapter: the only main-venv module that knows AppWorld's data layout and engine.

The engine runs in `.venv-appworld` behind worker processes (pool.py); the agent is
agent.py; success, pass_count / num_tests and difficulty come from AppWorld's own
`world.evaluate()`. Records carry `scenario_id` (the 7-hex prefix of the task id) so analysis can
aggregate TGC (mean task success) and SGC (mean over scenarios of the min task success).

Data (licensed; never printed, never committed): `APPWORLD_ROOT` if it holds data/, else the repo's
`.cache/appworld/root`; if neither holds data, a bundle named by `APPWORLD_DATA_BUNDLE` is unpacked
with AppWorld's own helper, else `appworld download data` is tried. Both write into a scratch folder
first, so a failure leaves nothing behind and validation exits 2 before any run directory exists.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import threading
from collections import Counter
from dataclasses import asdict, dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Optional, Sequence

from harness.assembly.options import PLACEMENTS, check
from harness.benchmarks.appworld.agent import DEFAULT_PLACEMENT, ReActCodeAgent, StepRecord, build_messages
from harness.benchmarks.episode import EpisodeFrame
from harness.benchmarks.protocol import BenchmarkBase, Task
from harness.benchmarks.appworld.pool import WORKER_SCRIPT, EngineError, WorkerError, WorkerPool
from harness.ledger import MemoryTokenCounter
from harness.errors import INFRA, MAX_STEPS
from harness.records import EpisodeRecord
from harness.row import RowLike
from harness.serving.models import ModelSpec
from harness.settings import BenchmarkSettings
from strategies import EMPTY, Strategy, TaskView, Trajectory

REPO = Path(__file__).resolve().parents[3]
VENV = REPO / ".venv-appworld"
VENV_PYTHON = VENV / "bin" / "python"
CACHE = REPO / ".cache" / "appworld"  # APPWORLD_CACHE: `appworld install` unpacks its tests here
DEFAULT_ROOT = CACHE / "root"
SPLITS = ("train", "dev", "test_normal", "test_challenge")
EXPERIMENT = "memdeliv"  # AppWorld's outputs go to each worker's scratch root, never the data root
OPEN_TIMEOUT_S = 300.0  # the first world in a process loads every app (seconds; more on a busy machine)
FETCH_TIMEOUT_S = 600
TRAJECTORY_FORMAT = "memdeliv-appworld/1"


class DataMissing(ValueError):
    """No AppWorld data could be found or fetched (a config error: exit 2, nothing written)."""


def has_data(root: Path) -> bool:
    return (root / "data" / "datasets").is_dir() and (root / "data" / "tasks").is_dir()


def data_root() -> Path:
    """Where the data is looked for (and put, when a bundle or download provides it)."""
    env = os.environ.get("APPWORLD_ROOT")
    return Path(env).expanduser().resolve() if env else DEFAULT_ROOT


def _fetch_into(root: Path, command: list[str], env: dict[str, str], stage: Path) -> Optional[str]:
    """Run an unpack/download into `stage`; on success move stage/data to root/data. None or why not."""
    try:
        proc = subprocess.run(command, cwd=stage, env=env, capture_output=True, text=True, timeout=FETCH_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return f"gave up after {FETCH_TIMEOUT_S} s"
    if not has_data(stage):  # `appworld download data` exits 0 even when the request failed
        said = " ".join(f"{proc.stdout} {proc.stderr}".split())
        return f"...{said[-240:]}" if said else f"exit code {proc.returncode}, no data produced"
    root.mkdir(parents=True, exist_ok=True)
    shutil.move(str(stage / "data"), str(root / "data"))
    return None


def locate_data() -> Path:
    root = data_root()
    if has_data(root):
        return root
    if not VENV_PYTHON.exists():
        raise DataMissing("AppWorld's engine venv (.venv-appworld) is missing: run `make setup` first")
    bundle = os.environ.get("APPWORLD_DATA_BUNDLE")
    env = {k: v for k, v in os.environ.items() if k not in ("APPWORLD_ROOT", "APPWORLD_CACHE")}
    with tempfile.TemporaryDirectory(prefix="memdeliv-appworld-fetch-") as tmp:
        stage = Path(tmp)
        env.update(APPWORLD_ROOT=str(stage), APPWORLD_CACHE=str(CACHE))
        why: Optional[str]
        if bundle:
            if not Path(bundle).is_file():
                why = "no such file"
            else:
                why = _fetch_into(root, [str(VENV_PYTHON), str(WORKER_SCRIPT), "unpack",
                                         str(Path(bundle).resolve()), str(stage)], env, stage)
            tried = f"unpacking APPWORLD_DATA_BUNDLE={bundle} failed: {why}"
        else:
            why = _fetch_into(root, [str(VENV / "bin" / "appworld"), "download", "data"], env, stage)
            tried = f"`appworld download data` failed: {why}"
    if why is None and has_data(root):
        return root
    raise DataMissing(
        f"AppWorld data not found in {root}/data, and {tried}\n"
        "To get it (licensed data: share it only in its encrypted bundle):\n"
        f"  - with internet: `make appworld-data` downloads and unpacks it into {DEFAULT_ROOT}\n"
        "    (used when APPWORLD_ROOT is unset)\n"
        "  - offline: copy AppWorld's encrypted bundle (data-0.1.0.bundle) to this machine and set\n"
        "    APPWORLD_DATA_BUNDLE=/path/to/data-0.1.0.bundle (unpacked on the next run)\n"
        "  - or set APPWORLD_ROOT to an existing AppWorld root (the folder that holds data/)")


@dataclass(frozen=True)
class AppWorldTask:
    id: str
    split: str

    @property
    def scenario_id(self) -> str:
        return scenario_of(self.id)


def scenario_of(task_id: str) -> str:
    """AppWorld ids are `<7-hex scenario>_<n>`; SGC groups tasks by this prefix."""
    return task_id.split(":")[0].split("_")[0]


class AppWorldBenchmark(BenchmarkBase):
    """One AppWorld split, as the runner sees it (the Benchmark protocol)."""

    placements = PLACEMENTS
    default_placement = DEFAULT_PLACEMENT  # ACE's AppWorld layout: the playbook in the first user message

    def __init__(self, settings: BenchmarkSettings):
        super().__init__(settings)
        self._pool: Optional[WorkerPool] = None
        self._pool_lock = threading.Lock()

    # ---- what the runner calls -------------------------------------------------------------
    def validate(self) -> None:
        if self.settings.split not in SPLITS:
            raise ValueError(f"{self.name}: unknown split {self.settings.split!r}; valid: {', '.join(SPLITS)}")
        try:
            check(self.settings.placement, placements=self.placements)
        except ValueError as exc:
            raise ValueError(f"{self.name}: {exc}") from None
        if self.settings.max_steps < 1:
            raise ValueError(f"{self.name}: benchmark.max_steps must be >= 1, got {self.settings.max_steps}")
        if not (VENV / ".setup-done").exists():
            raise ValueError("AppWorld's engine venv (.venv-appworld) is not set up: run `make setup`")
        known = set(self._split_ids)  # finds (or fetches) the data; DataMissing is a config error
        if self.settings.task_ids:
            missing = [str(t) for t in self.settings.task_ids if str(t) not in known]
            if missing:
                raise ValueError(f"{self.name}/{self.settings.split}: unknown task ids {missing}")

    @cached_property
    def root(self) -> Path:
        return locate_data()

    @cached_property
    def _split_ids(self) -> list[str]:
        path = self.root / "data" / "datasets" / f"{self.settings.split}.txt"
        if not path.is_file():
            raise DataMissing(f"AppWorld data under {self.root} has no {self.settings.split} split ({path} is missing)")
        return [line.strip().split(":")[0] for line in path.read_text().splitlines() if line.strip()]

    def tasks(self) -> list[AppWorldTask]:
        ids = self._split_ids
        if self.settings.task_ids:
            wanted = {str(t) for t in self.settings.task_ids}
            ids = [i for i in ids if i in wanted]
        if self.settings.limit is not None:
            ids = ids[: self.settings.limit]
        return [AppWorldTask(id=i, split=self.settings.split) for i in ids]

    @cached_property
    def _scenario_sizes(self) -> Counter:
        return Counter(scenario_of(i) for i in self._split_ids)

    def cut_scenarios(self, tasks: Sequence[Task]) -> list[str]:
        """Scenarios of which `tasks` holds only some (a LIMIT or task_ids cut them): SGC cannot use them."""
        have = Counter(scenario_of(t.id) for t in tasks)
        return sorted(s for s, n in have.items() if n < self._scenario_sizes[s])

    def workers(self) -> WorkerPool:
        with self._pool_lock:
            if self._pool is None:
                self._pool = WorkerPool(VENV_PYTHON, self.root / "data", CACHE, start_timeout_s=OPEN_TIMEOUT_S)
            return self._pool

    def close(self) -> None:
        with self._pool_lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()

    def run_episode(self, task: AppWorldTask, *, trial: int, seed: int, strategy: Strategy, model: ModelSpec,
                    counter: MemoryTokenCounter, trajectory_path: Path) -> tuple[EpisodeRecord, Trajectory]:
        """One task x trial: open the world, run the agent, let AppWorld's evaluator judge; record and trajectory."""
        frame = EpisodeFrame()
        view = TaskView(benchmark=self.name, task_id=task.id, description="")
        opened: dict[str, Any] = {}
        evaluation: Optional[dict[str, Any]] = None
        agent: Optional[ReActCodeAgent] = None
        step_timeout = float(self.settings.step_timeout_s)
        with self.workers().lease() as worker:
            try:
                opened = worker.request("open", OPEN_TIMEOUT_S, task_id=task.id, experiment_name=EXPERIMENT,
                                        timeout_seconds=int(step_timeout), want_gold=bool(model.scripted))
                view = TaskView(benchmark=self.name, task_id=task.id, description=opened["instruction"])
                client, _ = model.clients(task_script=self.oracle_script(task, opened) if model.scripted else None)
                client.kwargs["seed"] = seed
                agent = ReActCodeAgent(client, strategy, view, frame.ledger, counter, max_steps=self.settings.max_steps,
                                       assembly_options=self.assembly)

                def execute(code: str) -> tuple[str, bool]:
                    reply = worker.request("execute", step_timeout + 60, code=code)
                    return reply["output"], reply["completed"]

                agent.run(opened["supervisor"], opened["instruction"], execute)
                evaluation = worker.request("evaluate", OPEN_TIMEOUT_S)
                worker.request("close", OPEN_TIMEOUT_S)
            except WorkerError as exc:
                frame.label(INFRA, f"engine worker failed: {exc}")
            except EngineError as exc:
                frame.label(INFRA, f"AppWorld engine error: {exc}")
            except Exception as exc:  # context_overflow / strategy / infra (provider) / harness: harness.errors
                frame.fail(exc)
        steps = agent.result.steps if agent else []
        if frame.error is None and not (agent and agent.result.completed):
            frame.label(MAX_STEPS)
        error = frame.error
        termination = "completed" if error is None else "infra_error" if error == INFRA else error  # or the label
        evaluation = evaluation or {}
        pass_count, num_tests = evaluation.get("pass_count", 0), evaluation.get("num_tests", 0)
        success = bool(evaluation.get("success")) and error in (None, MAX_STEPS)
        reward = (pass_count / num_tests) if num_tests else float(success)  # share of AppWorld's tests passed
        trajectory = Trajectory(task=view, messages=self._conversation(opened, steps), reward=reward,
                                success=success, feedback=evaluation.get("report", ""))
        frame.write(trajectory_path, self._trajectory_file(task, opened, steps, frame, evaluation))
        return frame.finish(task.id, success=success, reward=reward, termination=termination,
                            task_text=view.description, trajectory=trajectory, pass_count=pass_count,
                            num_tests=num_tests, difficulty=evaluation.get("difficulty", opened.get("difficulty")),
                            scenario_id=task.scenario_id,
                            scenario_tasks=self._scenario_sizes[task.scenario_id])  # SGC needs them all

    def gold_solution(self, task: AppWorldTask) -> Optional[str]:
        """The task's solution code (train/dev ship it), for an ACE Reflector allowed ground truth, as
        ace-appworld gives its Reflector; None where the split ships none."""
        with self.workers().lease() as worker:
            return worker.request("gold", OPEN_TIMEOUT_S, task_id=task.id).get("gold_code")

    def oracle_script(self, task: AppWorldTask, opened: dict[str, Any]) -> dict[str, Any]:
        """A scripted model's script (harness/scripted/appworld_script.py); never called for a real model."""
        from harness.scripted.appworld_script import oracle_script

        return oracle_script(task.id, opened)

    # ---- trajectories ------------------------------------------------------------------------
    @staticmethod
    def _conversation(opened: dict[str, Any], steps: list[StepRecord]) -> tuple[dict[str, Any], ...]:
        if not opened:
            return ()
        return tuple(build_messages(opened["supervisor"], opened["instruction"], EMPTY, steps))

    @staticmethod
    def _trajectory_file(task: AppWorldTask, opened: dict[str, Any], steps: list[StepRecord], frame: EpisodeFrame,
                         evaluation: dict[str, Any]) -> str:
        acts = [e for e in frame.ledger.agent_steps if e.phase == "act"]  # answer calls ride with their step
        doc = {"format": TRAJECTORY_FORMAT, "task_id": task.id, "split": task.split, "scenario_id": task.scenario_id,
               "instruction": opened.get("instruction"), "supervisor": opened.get("supervisor"),
               "steps": [{**asdict(s), "delivered_ids": list(e.delivered_ids)} for s, e in zip(steps, acts)],
               "evaluation": evaluation, "error": frame.error, "error_detail": frame.detail}
        return json.dumps(doc, indent=1)

    def load_trajectory(self, path: Path, record: RowLike) -> Trajectory:
        """A stored episode as the strategy protocol's Trajectory."""
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
        steps = [StepRecord(reply=s["reply"], code=s["code"], observation=s["observation"]) for s in doc["steps"]]
        opened = {"supervisor": doc["supervisor"], "instruction": doc["instruction"]} if doc.get("supervisor") else {}
        view = TaskView(benchmark=self.name, task_id=doc["task_id"], description=doc.get("instruction") or "")
        return Trajectory(task=view, messages=self._conversation(opened, steps), reward=float(record["reward"]),
                          success=bool(record["success"]), feedback=(doc.get("evaluation") or {}).get("report", ""))
