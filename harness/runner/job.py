"""What a job is: one model x strategy x benchmark of a sweep, resolved once from its composed config.

`resolve(cfg)` builds and validates the benchmark adapter, finds the memory artifact and checks its provenance
(memory learned from the evaluated tasks, or labels off train: refused), reads the strategy's declared
capabilities, and derives the key, the slug, the run paths, the identity a resume must match, the trial seeds
and the request-assembly options. Everything after it (the job loop, the executors, the episode runner, the
store, the budget, a Ray worker) takes the frozen `Job`, never the config. The CLI resolves every job of a sweep
while it checks them (exit 2 before anything is written) and parks each; the job Hydra then launches in the
same process claims its parked `Job` instead of resolving again (`resolve`), so the checks run once per job.
"""

from __future__ import annotations

import hashlib
import random
import threading
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Optional

from omegaconf import OmegaConf

import strategies
from harness import benchmarks
from harness.assembly.job_config import options_for, variant_suffix
from harness.assembly.options import DEFAULTS as ASSEMBLY_DEFAULTS, AssemblyOptions
from harness.config import job_memory, strategy_options
from harness.provenance import job_provenance
from harness.row import SCHEMA_VERSION

TRAJECTORIES = "trajectories"  # the run directory's folder of trajectory files
MEMORY = "memory"  # the run directory's folder of what learning strategies save, one folder per job


@dataclass(frozen=True)
class Capabilities:
    """What the strategy declares before it is built (strategies.StrategyBase), read once for the job: whether it
    reads `memory=` (the provenance check and label) and whether, so configured, it learns from labels (the
    ground-truth check; what its learning and record_facts are shown). Its option names are checked by the CLI."""

    uses_memory: bool
    uses_ground_truth: bool


@dataclass(frozen=True)
class Job:
    """One job, resolved. `cfg` is kept for what is built from config nodes (the adapter, the model spec), with
    interpolations unresolved, so a Ray worker resolves secrets from its own environment."""

    cfg: Any = field(repr=False)
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
    benchmark: Any = field(default=None, repr=False, compare=False)  # the adapter, built and validated once

    def __getstate__(self) -> dict[str, Any]:  # shipped to Ray workers without the adapter: they build their own
        return {**self.__dict__, "benchmark": None}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    @property
    def run_name(self) -> Optional[str]:
        return self.cfg.run_name

    @property
    def trials(self) -> int:
        return int(self.cfg.benchmark.trials)

    @property
    def strategy_name(self) -> str:
        return str(self.cfg.strategy.name)

    @cached_property
    def strategy_options(self) -> dict[str, Any]:
        return strategy_options(self.cfg)

    @property
    def trajectories(self) -> Path:
        """The folder of this job's trajectory files, relative to the run directory."""
        return Path(TRAJECTORIES) / self.slug

    @property
    def artifacts_dir(self) -> Path:
        return self.run_dir / MEMORY / self.slug

    @cached_property
    def row_fields(self) -> dict[str, Any]:
        """The job's fields of every row it writes (harness/row.py), in their order."""
        c = self.cfg
        return {"schema": SCHEMA_VERSION, "run": c.run_name, "job": self.key, "benchmark": c.benchmark.name,
                "split": c.benchmark.split, "model": c.model.name, "user_model": c.model.user_name or c.model.name,
                "strategy": self.strategy_name, "memory": self.memory,
                **({"strategy_variant": c.strategy.variant} if c.strategy.get("variant") else {}),
                "memory_provenance": self.provenance, "placement": self.assembly.placement,
                "context_policy": self.assembly.context_policy, "answer_mode": self.assembly.answer_mode,
                # `openai/<alias>`: a model served by the managed llama.cpp server
                **({"model_server": LOCAL_SERVER} if c.model.get("gguf") else {})}

    def adapter(self) -> Any:
        """The benchmark adapter: the one resolve built, or (in a Ray worker) a new one from the config."""
        return self.benchmark if self.benchmark is not None else benchmarks.create(self.cfg.benchmark)


LOCAL_SERVER = "local llama.cpp"


def trial_seeds(seed: int, trials: int) -> tuple[int, ...]:
    """Same derivation as tau2's run_tasks, so trial seeds match a plain `tau2 run`."""
    rng = random.Random(seed)
    return tuple(rng.randint(0, 1000000) for _ in range(trials))


def job_key(cfg: Any) -> str:
    """benchmark/split/model/strategy, plus `@placement=...,answer_mode=...` for non-default request assembly."""
    variant = cfg.strategy.get("variant")  # e.g. a dose cell (configs/strategy/dose/): its options set apart
    strategy = f"{cfg.strategy.name}({variant})" if variant else cfg.strategy.name
    return (f"{cfg.benchmark.name}/{cfg.benchmark.split}/{cfg.model.name}/{strategy}"
            f"{variant_suffix(cfg.benchmark, benchmarks.default_placement(cfg.benchmark))}")


def slug(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in text)


def file_digest(path: Optional[str]) -> Optional[str]:
    if not path or not Path(path).is_file():
        return None
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]


def identity(cfg: Any, memory: Optional[str] = None) -> dict[str, Any]:
    """What must not change when a run is resumed (limit, trials, concurrency may); `memory`: the job's artifact,
    when the caller has it already."""
    m, s, b = cfg.model, cfg.strategy, cfg.benchmark
    memory = memory if memory is not None else job_memory(cfg)
    return {
        "model": {"name": m.name, "user_name": m.user_name, "kwargs": OmegaConf.to_container(m.kwargs),
                  "tool_mode": m.tool_mode, "gguf": m.gguf,
                  **({"context_window": m.context_window} if m.context_window else {})},
        "strategy": {"name": s.name, "options": strategy_options(cfg)},
        "memory": {"path": memory, "sha256_16": file_digest(memory)},
        "benchmark": {"name": b.name, "split": b.split, "seed": b.seed, "max_steps": b.max_steps,
                      "max_errors": b.max_errors, "placement": b.placement,
                      # only when not the default, so runs made before these options existed still resume
                      **{k: b[k] for k, v in ASSEMBLY_DEFAULTS.items() if b[k] != v}},
    }


def capabilities(name: str, options: dict[str, Any]) -> Capabilities:
    return Capabilities(uses_memory=strategies.uses_memory(name),
                        uses_ground_truth=strategies.uses_ground_truth(name, options))


_parked: dict[str, Job] = {}  # config fingerprint -> a job the CLI resolved while checking the sweep
_parked_lock = threading.Lock()


def _fingerprint(cfg: Any) -> str:
    return OmegaConf.to_yaml(cfg)  # unresolved: the same text for the CLI's compose and Hydra's


def resolve(cfg: Any, *, park: bool = False) -> Job:
    """The job of a composed config; raises ValueError (a benchmark's validate(), provenance) before anything is
    written. park=True (the CLI's check): keep it for the launch that follows, which then claims it."""
    with _parked_lock:
        parked = None if park else _parked.pop(_fingerprint(cfg), None)
    if parked is not None and parked.identity["memory"]["sha256_16"] == file_digest(parked.memory):
        return parked  # the artifact is the one checked; anything else changed would change the config
    bench = benchmarks.create(cfg.benchmark)
    bench.validate()
    memory = job_memory(cfg)
    declared = capabilities(str(cfg.strategy.name), strategy_options(cfg))
    key = job_key(cfg)
    job = Job(cfg=cfg, key=key, slug=slug(key.replace("/", "__")), run_dir=Path(cfg.runs_dir) / str(cfg.run_name),
              memory=memory, provenance=job_provenance(cfg, bench, memory, uses_memory=declared.uses_memory,
                                                       ground_truth=declared.uses_ground_truth),
              identity={**identity(cfg, memory), **bench.identity_extra()},
              seeds=trial_seeds(cfg.benchmark.seed, cfg.benchmark.trials),
              assembly=options_for(cfg.benchmark, cfg.model),
              capabilities=declared, executor=str(cfg.executor.name), benchmark=bench)
    if park:
        with _parked_lock:
            _parked[_fingerprint(cfg)] = job
    return job
