"""A job's settings, typed and frozen: what `harness.config.to_settings` makes of the composed config, once, at the
entry. Everything below the entry (runner, benchmarks, assembly, serving, store) reads these, never a config node.

The fields are the Hydra schema's (harness/config.py; tests/test_typed_middle.py holds the two to the same names)
and so are the defaults: a settings object is only ever made from a composed config. Free-form tables (model
kwargs, strategy options, ...) are `FrozenMap`s; a value given there as `${oc.env:VAR}` (a secret moved off the
command line by harness.run) stays an `EnvRef`, read from the environment of the process that uses it, so a `Job`
pickled to a Ray worker never carries the secret itself.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, fields, is_dataclass
from typing import Any, Iterator, Mapping, Optional

MISSING_VALUE = "???"  # OmegaConf's mark of a value an experiment demands and nobody gave


@dataclass(frozen=True)
class EnvRef:
    """A value read from this process's environment where it is used (`${oc.env:VAR}` in the config)."""

    var: str
    default: Optional[str] = None

    def value(self) -> Optional[str]:
        return os.environ.get(self.var, self.default)

    def __str__(self) -> str:  # as the config spelled it (a job's identity shows the reference, not the secret)
        return f"${{oc.env:{self.var}{',' + self.default if self.default is not None else ''}}}"


class FrozenMap(Mapping[str, Any]):
    """A read-only table of plain values (nested tables frozen too); hashable, picklable."""

    def __init__(self, data: Mapping[str, Any] | None = None):
        self._data = {str(k): freeze(v) for k, v in (data or {}).items()}

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __hash__(self) -> int:
        return hash(tuple(self._data.items()))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Mapping) and dict(self._data) == dict(other)

    def __repr__(self) -> str:
        return f"FrozenMap({self._data!r})"


def freeze(value: object) -> Any:
    if isinstance(value, Mapping) and not isinstance(value, FrozenMap):
        return FrozenMap(value)
    if isinstance(value, (list, tuple)):
        return tuple(freeze(v) for v in value)
    return value


def plain(value: object, *, secrets: bool = True) -> Any:
    """Builtin containers of a settings value: dataclasses and tables as dicts, tuples as lists. secrets=True reads
    each `EnvRef` from the environment (this process uses the value); False keeps its `${oc.env:...}` text."""
    if is_dataclass(value) and not isinstance(value, (type, EnvRef)):
        return {f.name: plain(getattr(value, f.name), secrets=secrets) for f in fields(value)}
    if isinstance(value, Mapping):
        return {k: plain(v, secrets=secrets) for k, v in value.items()}
    if isinstance(value, tuple):
        return [plain(v, secrets=secrets) for v in value]
    if isinstance(value, EnvRef):
        return value.value() if secrets else str(value)
    return value


@dataclass(frozen=True)
class ModelSettings:
    name: str
    kwargs: FrozenMap
    api_key_env: Optional[str]
    user_name: Optional[str]
    user_kwargs: Optional[FrozenMap]
    max_retries: int
    retry_backoff_s: float
    scripted: bool
    tool_mode: str
    gguf: Optional[str]
    n_ctx: int
    server_args: FrozenMap
    profile: Optional[str]
    world: Optional[str]
    context_window: Optional[int]
    prompt_caching: bool
    price_per_mtok_in: Optional[float]
    price_per_mtok_out: Optional[float]
    price_per_mtok_cached: Optional[float]
    price_per_mtok_cache_write: Optional[float]

    def price_override(self) -> dict[str, Optional[float]]:
        """The model.price_per_mtok_* keys (memory_kit/prices.py reads them as a table)."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name.startswith("price_per_mtok_")}


@dataclass(frozen=True)
class StrategySettings:
    name: str
    options: FrozenMap
    variant: Optional[str]


@dataclass(frozen=True)
class BenchmarkSettings:
    """The keys every benchmark shares (a plugin adapter reads its settings from these too)."""

    name: str
    domain: str
    split: str
    limit: Optional[int]
    task_ids: Optional[tuple[str, ...]]
    trials: int
    orders: int
    seed: int
    max_steps: int
    max_errors: int
    placement: str
    max_observation_chars: Optional[int]
    context_policy: str
    answer_mode: str
    step_timeout_s: float
    data_dir: Optional[str]
    judge_model: Optional[str]
    judge_kwargs: FrozenMap
    agent: str


@dataclass(frozen=True)
class ExecutorSettings:
    name: str
    address: Optional[str]
    num_cpus: Optional[int]
    cpus_per_episode: float
    max_retries: int


@dataclass(frozen=True)
class JobSettings:
    """One job's composed config: model, strategy, benchmark, executor, and the run's own keys."""

    model: ModelSettings
    strategy: StrategySettings
    benchmark: BenchmarkSettings
    executor: ExecutorSettings
    memory: Optional[str]
    memory_by_strategy: FrozenMap
    run_name: Optional[str]
    runs_dir: str
    concurrency: int
    progress: bool
    retry_infra: bool
    allow_in_sample: bool
    analysis: FrozenMap
    budget_usd: Optional[float]
    sequential: FrozenMap = FrozenMap()  # until, wave, delta (harness/config.py SequentialConfig)

    @property
    def job_memory(self) -> Optional[str]:
        """The memory artifact of this job: `memory_by_strategy[<strategy>]` when given (null: none, so an online
        learner starts empty whatever `memory` is), else `memory`; a control arm reads its reference's entry
        (`memory_of`: placebo's `match`) when it has none of its own; a design that reads its entry only
        (`memory_entry_only`: dynamic_cheatsheet, awm_online) gets none without one."""
        from strategies.registry import job_memory

        return job_memory(self.strategy.name, self.strategy_options(), self.memory_by_strategy, self.memory)

    def strategy_options(self) -> dict[str, Any]:
        """The strategy's options as plain values, secrets read from this process's environment."""
        return dict(plain(self.strategy.options))
