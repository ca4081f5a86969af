"""The Benchmark protocol: what the runner, the CLI checks, resume, retries and memory building call.

An adapter is a class built from the job's benchmark settings (`Adapter(settings)`, a frozen
harness.settings.BenchmarkSettings: split, limit, task_ids, trials, seed, ...) and registered under
the `memdeliv.benchmarks` entry-point group (harness/benchmarks/registry.py). It must provide the members
of `Benchmark`; the optional capabilities have no-op defaults in `BenchmarkBase`, which every adapter
inherits, so the harness calls them plainly and never probes for them.

The path of one episode: the runner asks `tasks()`, then, per task x trial, `run_episode(...)` returns
`(EpisodeRecord, Trajectory)` (harness/records.py): the record holds the fields every benchmark writes
(task_id, success, reward, termination, error, error_detail, the ledger's columns, wall_s, task_text) and the
benchmark's own in `extra`; the trajectory (a strategies.Trajectory) goes to online learners and is never
stored. The adapter writes its own trajectory file at `trajectory_path`; `load_trajectory` reads it back
(resume, `make memory`). `EpisodeFrame` (harness/benchmarks/episode.py) is the frame every run_episode shares:
clock, ledger, error labels, the redacted atomic file write and the record.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Optional, Protocol, Sequence

from harness.assembly.options import DEFAULT_PLACEMENT, PLACEMENTS  # where a memory block may go in the request
from harness.assembly.options import AssemblyOptions
from harness.records import EpisodeRecord
from harness.row import RowLike
from harness.settings import BenchmarkSettings

if TYPE_CHECKING:  # LiteLLM's seconds of import: not for a command line refused by its config check
    from harness.ledger import MemoryTokenCounter
    from harness.serving.models import ModelSpec
from strategies import Strategy, Trajectory


class Task(Protocol):
    """What the runner needs of a task: an id that is unique within its split."""

    @property
    def id(self) -> str: ...


class Benchmark(Protocol):
    """One benchmark split as the runner sees it. Built from its settings: `Adapter(settings)`."""

    name: str  # the config name, e.g. tau2_retail
    settings: BenchmarkSettings  # split, limit, task_ids, trials, seed, max_steps, placement, ...
    assembly: AssemblyOptions  # the job's request assembly (registry.create sets it), what its agents use
    placements: ClassVar[tuple[str, ...]]  # the request layouts it supports (benchmark.placement)
    default_placement: ClassVar[str]  # the published setup's layout; others suffix the job key

    def validate(self) -> None:
        """Split, task ids and data checks; raise ValueError with a readable reason (exit 2, nothing written)."""

    def tasks(self) -> Sequence[Task]:
        """The selected tasks (split, then task_ids, then limit), in a fixed order."""

    def run_episode(self, task: Any, *, trial: int, seed: int, strategy: Strategy, model: ModelSpec,
                    counter: MemoryTokenCounter,
                    trajectory_path: Path) -> tuple[EpisodeRecord, Trajectory]:
        """Run one task x trial and write its trajectory file to `trajectory_path`; return its record and its
        trajectory (`EpisodeFrame.finish`). Failures of the episode are labelled in the record
        (harness.errors.classify); only ProviderUnusable propagates."""

    # ---- optional capabilities (BenchmarkBase gives each a no-op default) ----
    @property
    def task_set(self) -> Optional[dict[str, Any]]:
        """The task set's identity (e.g. τ²: version and sha256), written into learned memories' provenance."""

    def identity_extra(self) -> dict[str, Any]:
        """Job identity beyond the config keys (a resumed run must match it)."""

    def manifest_facts(self) -> dict[str, Any]:
        """Facts for the job's manifest entry."""

    def cut_scenarios(self, tasks: Sequence[Task]) -> list[str]:
        """Scenario ids only partly selected (AppWorld's SGC needs whole scenarios); the runner warns."""

    def needs_judge(self) -> bool:
        """Whether a selected task needs an LLM judge (its model is checked before the run)."""

    def gold_solution(self, task: Any) -> Optional[str]:
        """The task's gold solution for a learner allowed ground truth on train; None when there is none."""

    def load_trajectory(self, path: Path, record: RowLike) -> Optional[Trajectory]:
        """A stored episode back as a Trajectory; None when this benchmark cannot (no replay, no memory)."""

    def close(self) -> None:
        """Release what episodes started (AppWorld's engine workers); called when a job ends."""


# the class-level members every adapter has (registry.create checks them; `name`, `settings` are set per instance)
MEMBERS = ("placements", "default_placement", "validate", "tasks", "run_episode", "task_set", "identity_extra",
           "manifest_facts", "cut_scenarios", "needs_judge", "gold_solution", "load_trajectory", "close")


class BenchmarkBase:
    """No-op defaults for every optional member of `Benchmark`; adapters inherit it and override what they have."""

    placements: ClassVar[tuple[str, ...]] = PLACEMENTS
    default_placement: ClassVar[str] = DEFAULT_PLACEMENT
    assembly: AssemblyOptions = AssemblyOptions()  # the defaults until registry.create gives the job's

    @property
    def task_set(self) -> Optional[dict[str, Any]]:
        return None

    def __init__(self, settings: BenchmarkSettings):
        self.settings = settings
        self.name = settings.name

    def identity_extra(self) -> dict[str, Any]:
        return {}

    def manifest_facts(self) -> dict[str, Any]:
        return {}

    def cut_scenarios(self, tasks: Sequence[Task]) -> list[str]:
        return []

    def needs_judge(self) -> bool:
        return False

    def gold_solution(self, task: Any) -> Optional[str]:
        return None

    def load_trajectory(self, path: Path, record: RowLike) -> Optional[Trajectory]:
        return None

    def close(self) -> None:
        return None
