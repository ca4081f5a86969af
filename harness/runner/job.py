"""What a job is: one model x strategy x benchmark of a sweep, resolved once from its typed settings.

`resolve(settings)` builds and validates the benchmark adapter, finds the memory artifact and checks its provenance
(memory learned from the evaluated tasks, or labels off train: refused), reads the strategy's declared
capabilities, and derives the key, the slug, the run paths, the identity a resume must match, the trial seeds
and the request-assembly options. Everything after it (the job loop, the executors, the episode runner, the
store, the budget, a Ray worker) takes the frozen `Job`, never a config. The CLI checks and resolves every job of
a sweep (harness/checks.py, exit 2 before anything is written) and the job Hydra then launches claims the `Job`
checked for its settings (harness/run.py), so the checks run once per job.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Optional, Sequence

import strategies
from strategies.frame import Frame
from harness import benchmarks
from harness.assembly.job_config import options_for, variant_suffix
from harness.assembly.options import DEFAULTS as ASSEMBLY_DEFAULTS, AssemblyOptions
from harness.benchmarks import Benchmark
from harness.benchmarks.protocol import Task
from harness.provenance import job_provenance
from harness.row import SCHEMA_VERSION
from harness.settings import JobSettings, plain

TRAJECTORIES = "trajectories"  # the run directory's folder of trajectory files
MEMORY = "memory"  # the run directory's folder of what learning strategies save, one folder per job


@dataclass(frozen=True)
class Capabilities:
    """What the strategy declares before it is built (strategies.StrategyBase), read once for the job: whether it
    reads `memory=` (the provenance check and label) and whether, so configured, it learns from labels (the
    ground-truth check; what its learning and record_facts are shown). Its option names are checked by the CLI."""

    uses_memory: bool
    uses_ground_truth: bool
    learns_online: bool = False
    trial_streams: bool = False  # with learns_online: one independent learning stream per trial


@dataclass(frozen=True)
class Job:
    """One job, resolved from its typed settings (harness/settings.py). A secret in them is an `EnvRef`, so a Ray
    worker reads it from its own environment."""

    settings: JobSettings = field(repr=False)
    key: str  # benchmark/split/model/strategy[(variant)][@assembly]
    slug: str  # the key as a file name
    run_dir: Path
    memory: Optional[str]  # the artifact this job's strategy is given (memory_by_strategy wins over memory)
    provenance: Optional[str]  # IN-SAMPLE | unknown provenance | held-out | None (no memory used)
    identity: dict[str, Any]  # what a resume must match (the adapter's identity_extra included)
    seeds: tuple[int, ...]  # one per trial
    assembly: AssemblyOptions
    capabilities: Capabilities
    executor: str  # the configured executor (threads | ray); an online learner runs in order whatever it says
    benchmark: Optional[Benchmark] = field(default=None, repr=False, compare=False)  # built and validated once

    def __getstate__(self) -> dict[str, Any]:  # shipped to Ray workers without the adapter: they build their own
        return {**self.__dict__, "benchmark": None}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    @property
    def run_name(self) -> Optional[str]:
        return self.settings.run_name

    @property
    def orders(self) -> int:
        """Task orders the job runs: `benchmark.orders` for an online learner's streams, else 1 (the order of
        independent episodes changes nothing)."""
        return self.settings.benchmark.orders if self.capabilities.learns_online else 1

    @property
    def trials(self) -> int:
        """The job's trials: `benchmark.trials` in each task order; trial t runs in order t // benchmark.trials."""
        return self.settings.benchmark.trials * self.orders

    def order_of(self, trial: int) -> Optional[int]:
        """The task order trial `trial` runs in (its rows' `order`); None when the job runs one order."""
        return trial // self.settings.benchmark.trials if self.orders > 1 else None

    def task_order(self, tasks: Sequence[Task], trial: int) -> list[Task]:
        """The tasks in the order trial `trial`'s stream runs them: the benchmark's for order 0, else a
        permutation seeded by the benchmark seed and the order, the same for every strategy of the sweep (in a
        sequential sweep, of each wave's tasks apart: the stream of a longer pool starts with a shorter one's)."""
        order = self.order_of(trial)
        if not order:
            return list(tasks)
        # a sequential sweep (harness/waves.py) permutes within each wave, so a stream is its waves in turn
        wave = int(self.settings.sequential.get("wave", 10)) if self.settings.sequential.get("until") == "decided" \
            else len(tasks) or 1
        permuted = []
        for start in range(0, len(tasks), wave):
            part = list(tasks[start:start + wave])
            random.Random(f"{self.settings.benchmark.seed}:order:{order}" + (f":wave:{start // wave}" if start else
                                                                             "")).shuffle(part)
            permuted += part
        return permuted

    @property
    def strategy_name(self) -> str:
        return self.settings.strategy.name

    def strategy_options(self) -> dict[str, Any]:
        """Read where the strategy is built: a secret among them comes from this process's environment."""
        return self.settings.strategy_options()

    @property
    def trajectories(self) -> Path:
        """The folder of this job's trajectory files, relative to the run directory."""
        return Path(TRAJECTORIES) / self.slug

    @property
    def artifacts_dir(self) -> Path:
        return self.run_dir / MEMORY / self.slug

    @property
    def frame(self) -> Optional[Frame]:
        """The frame its strategy's memory block carries (strategies/frame.py); None: it declares none."""
        return strategies.delivered_frame(self.strategy_name, self.strategy_options())

    @cached_property
    def row_fields(self) -> dict[str, Any]:
        """The job's fields of every row it writes (harness/row.py), in their order."""
        s = self.settings
        return {"schema": SCHEMA_VERSION, "run": s.run_name, "job": self.key, "benchmark": s.benchmark.name,
                "split": s.benchmark.split, "model": s.model.name, "user_model": s.model.user_name or s.model.name,
                "strategy": self.strategy_name, "memory": self.memory,
                **({"strategy_variant": s.strategy.variant} if s.strategy.variant else {}),
                **({"memory_instruction": frame.instruction} if (frame := self.frame) is not None else {}),
                "memory_provenance": self.provenance, "placement": self.assembly.placement,
                "context_policy": self.assembly.context_policy, "answer_mode": self.assembly.answer_mode,
                # `openai/<alias>`: a model served by the managed llama.cpp server
                **({"model_server": LOCAL_SERVER} if s.model.gguf else {})}

    def adapter(self) -> Benchmark:
        """The benchmark adapter: the one resolve built, or (in a Ray worker) a new one from the settings."""
        if self.benchmark is None:
            return benchmarks.create(self.settings.benchmark, self.assembly)
        return self.benchmark


LOCAL_SERVER = "local llama.cpp"


def trial_seeds(seed: int, trials: int) -> tuple[int, ...]:
    """Same derivation as tau2's run_tasks, so trial seeds match a plain `tau2 run`."""
    rng = random.Random(seed)
    return tuple(rng.randint(0, 1000000) for _ in range(trials))


def stream_seeds(seed: int, trials: int, orders: int) -> tuple[int, ...]:
    """One seed per trial of every task order: order k's trial j has trial j's seed, so orders differ in the
    order of the tasks only."""
    return trial_seeds(seed, trials) * orders


def job_key(s: JobSettings) -> str:
    """benchmark/split/model/strategy, plus `@placement=...,answer_mode=...` for non-default request assembly."""
    variant = s.strategy.variant  # e.g. a dose cell (configs/strategy/dose/): its options set apart
    strategy = f"{s.strategy.name}({variant})" if variant else s.strategy.name
    return (f"{s.benchmark.name}/{s.benchmark.split}/{s.model.name}/{strategy}"
            f"{variant_suffix(s.benchmark, benchmarks.default_placement(s.benchmark.name))}")


def slug(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in text)


def file_digest(path: Optional[str]) -> Optional[str]:
    if not path or not Path(path).is_file():
        return None
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]


def identity(s: JobSettings, memory: Optional[str] = None) -> dict[str, Any]:
    """What must not change when a run is resumed (limit, trials, concurrency may); `memory`: the job's artifact,
    when the caller has it already. Model kwargs as the config spelled them (a secret by its reference)."""
    m, b = s.model, s.benchmark
    memory = memory if memory is not None else s.job_memory
    return {
        "model": {"name": m.name, "user_name": m.user_name, "kwargs": plain(m.kwargs, secrets=False),
                  "tool_mode": m.tool_mode, "gguf": m.gguf,
                  **({"context_window": m.context_window} if m.context_window else {})},
        "strategy": {"name": s.strategy.name, "options": s.strategy_options()},
        "memory": {"path": memory, "sha256_16": file_digest(memory)},
        "benchmark": {"name": b.name, "split": b.split, "seed": b.seed, "max_steps": b.max_steps,
                      "max_errors": b.max_errors, "placement": b.placement,
                      # trial t's task order depends on it (an online learner's; any other job runs one order)
                      **({"orders": b.orders} if b.orders != 1 and strategies.learns_online(
                          s.strategy.name, s.strategy_options()) else {}),
                      # only when not the default, so runs made before these options existed still resume
                      **{k: getattr(b, k) for k, v in ASSEMBLY_DEFAULTS.items() if getattr(b, k) != v}},
    }


def capabilities(name: str, options: dict[str, Any]) -> Capabilities:
    return Capabilities(uses_memory=strategies.uses_memory(name),
                        uses_ground_truth=strategies.uses_ground_truth(name, options),
                        learns_online=strategies.learns_online(name, options),
                        trial_streams=strategies.trial_streams(name))


def check_orders(s: JobSettings, declared: Capabilities) -> None:
    """Task orders permute independent learning streams: a learner whose one stream runs through every trial
    has no stream to permute apart."""
    if s.benchmark.orders > 1 and declared.learns_online and not declared.trial_streams:
        raise ValueError(f"benchmark.orders={s.benchmark.orders}: {s.strategy.name} learns online in one stream "
                         "through every trial (no trial_streams), so its task orders cannot run apart; use orders=1")


def resolve(s: JobSettings) -> Job:
    """The job of these settings; raises ValueError (a benchmark's validate(), provenance) before anything is
    written. The CLI's checks (harness/checks.py prepare) end here."""
    assembly = options_for(s.benchmark, s.model)
    bench = benchmarks.create(s.benchmark, assembly)
    bench.validate()
    memory = s.job_memory
    declared = capabilities(s.strategy.name, s.strategy_options())
    check_orders(s, declared)
    key = job_key(s)
    return Job(settings=s, key=key, slug=slug(key.replace("/", "__")), run_dir=Path(s.runs_dir) / str(s.run_name),
               memory=memory, provenance=job_provenance(s, bench, memory, uses_memory=declared.uses_memory,
                                                        ground_truth=declared.uses_ground_truth),
               identity={**identity(s, memory), **bench.identity_extra()},
               seeds=stream_seeds(s.benchmark.seed, s.benchmark.trials, s.benchmark.orders if declared.learns_online
                                  else 1), assembly=assembly,
               capabilities=declared, executor=s.executor.name, benchmark=bench)
