"""Structured configs: the schema Hydra validates every composed config against."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
import re
from typing import Any, Callable, Dict, List, Mapping, Optional, TypeVar, cast

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING, DictConfig, ListConfig, OmegaConf

from harness.assembly.options import (DEFAULT_PLACEMENT, DEFAULTS as ASSEMBLY_DEFAULTS, MAX_OBSERVATION_CHARS,
                                      PROMPT_CACHING)
from harness.serving.faults import MAX_RETRIES, RETRY_BACKOFF_S
from harness.settings import (BenchmarkSettings, EnvRef, ExecutorSettings, FrozenMap, JobSettings, ModelSettings,
                              StrategySettings, freeze)

CONFIG_DIR = str(Path(__file__).resolve().parent.parent / "configs")  # Hydra's config folder


@dataclass
class ModelConfig:
    name: str = MISSING  # any LiteLLM model string, e.g. openai/gpt-4.1, anthropic/claude-opus-4-6
    kwargs: Dict[str, Any] = field(default_factory=dict)  # temperature, api_base, ...
    api_key_env: Optional[str] = None  # name of the env var holding the key; the key itself is never stored
    user_name: Optional[str] = None  # user-simulator model; None = same as the agent model
    user_kwargs: Optional[Dict[str, Any]] = None  # None = same as kwargs
    max_retries: int = MAX_RETRIES
    retry_backoff_s: float = RETRY_BACKOFF_S
    scripted: bool = False  # scripted (fake) models get the task id through LiteLLM metadata
    tool_mode: str = "native"  # native | prompted (schemas in the system prompt, text replies) | auto
    gguf: Optional[str] = None  # GGUF file to serve locally (harness/serving/local_server.py); "bundled" = SmolLM2-135M
    n_ctx: int = 8192  # context size of the local server
    server_args: Dict[str, Any] = field(default_factory=dict)  # more llama_cpp.server flags, e.g. n_gpu_layers
    profile: Optional[str] = None  # model=simulated only: strong | small (harness/scripted/simulated_world.py)
    world: Optional[str] = None  # model=simulated only: the artifact of `make simulated-memory`
    context_window: Optional[int] = None  # prompt + reply tokens; None = n_ctx (local) or LiteLLM's model info
    prompt_caching: bool = PROMPT_CACHING  # mark the stable prefix with cache_control where needed (Anthropic)
    # USD per 1M tokens, overriding LiteLLM's price map (a model it does not price, or a negotiated price);
    # in and out together, cached / cache_write default to in (memory_kit/prices.py, docs/cost.md)
    price_per_mtok_in: Optional[float] = None
    price_per_mtok_out: Optional[float] = None
    price_per_mtok_cached: Optional[float] = None
    price_per_mtok_cache_write: Optional[float] = None


def open_options() -> DictConfig:
    """`strategy.options` as an open dict (struct off): `strategy.options.k=3` sets any option without Hydra's
    `+`, for every strategy, plugins included; the strategy's declared options catch typos before anything
    is written (strategies.registry.validate_options)."""
    return DictConfig({}, flags={"struct": False}, ref_type=Dict[str, Any], key_type=str, element_type=Any,
                      is_optional=False)


@dataclass
class StrategyConfig:
    name: str = MISSING
    options: Dict[str, Any] = field(default_factory=open_options)  # type: ignore[arg-type]  # DictConfig: a dict here
    # a label for this setting of the strategy's options (e.g. "top_k=3", configs/strategy/dose/): part of the job
    # key and the record (`strategy_variant`), so cells of one strategy with different options never collide
    variant: Optional[str] = None


@dataclass
class BenchmarkConfig:
    name: str = MISSING  # tau2_retail | tau2_airline | tau2_telecom | appworld | a plugin's (memdeliv.benchmarks)
    domain: str = MISSING
    split: str = "test"
    limit: Optional[int] = None
    task_ids: Optional[List[str]] = None
    trials: int = 1
    # an online learner's task stream in N seeded task orders (order 0: the benchmark's), each over `trials`
    # streams (docs/strategies.md "Task order"); every other strategy runs once whatever it says
    orders: int = 1
    seed: int = 300
    max_steps: int = 200  # tau2's default
    max_errors: int = 10
    # request assembly (harness/assembly/options.py: valid values and defaults)
    placement: str = DEFAULT_PLACEMENT  # valid values depend on the benchmark (its adapter's `placements`)
    max_observation_chars: Optional[int] = MAX_OBSERVATION_CHARS  # longer tool / code output is cut; null = never
    context_policy: str = ASSEMBLY_DEFAULTS["context_policy"]  # fail | priority_drop
    answer_mode: str = ASSEMBLY_DEFAULTS["answer_mode"]  # plain | rebuild (the reply regenerated from a clean request)
    step_timeout_s: float = 100.0  # AppWorld: one code execution (AppWorld's own default is 100 s)
    data_dir: Optional[str] = None  # τ²: a folder laid out like tau2-bench's data/ (else $TAU2_DATA_DIR, else packaged)
    judge_model: Optional[str] = None  # τ²: LiteLLM model judging NL_ASSERTION tasks (required when a task has them)
    judge_kwargs: Dict[str, Any] = field(default_factory=dict)  # τ²: extra LiteLLM kwargs for the judge
    agent: str = "tool_calling"  # τ²: tool_calling (tau2's LLMAgent) | react (THINK then ACT at every step)


@dataclass
class ExecutorConfig:
    """Where a job's episodes run (docs/scaling.md). One schema for every choice, so any unknown key is an error."""
    name: str = "threads"  # threads: a thread pool here (`concurrency` wide) | ray: one Ray task per episode
    address: Optional[str] = None  # ray: null = start a local Ray on 127.0.0.1 | auto | ray://host:port | host:port
    num_cpus: Optional[int] = None  # ray, local only: CPUs the local Ray may use (null = all of this machine)
    cpus_per_episode: float = 1.0  # ray: CPUs reserved per episode (below 1 packs API-bound episodes per core)
    max_retries: int = 1  # ray: reruns of an episode whose worker process died; then it is recorded as infra


@dataclass
class SequentialConfig:
    """`make sweep ... UNTIL=decided` (harness/waves.py, docs/deciding.md "Stopping early"): waves of `wave` new
    tasks, a look after each with margin `delta` points; `fixed` runs the whole size, as before."""

    until: str = "fixed"  # fixed | decided
    wave: int = 10
    delta: float = 5.0


@dataclass
class RunConfig:
    model: ModelConfig = MISSING
    strategy: StrategyConfig = MISSING
    benchmark: BenchmarkConfig = MISSING
    executor: ExecutorConfig = MISSING
    memory: Optional[str] = None  # path to a memory artifact (JSON lines of guidelines)
    # per strategy name, a memory artifact that wins over `memory` for that strategy's jobs (e.g. ACE's own
    # learned playbook beside the guideline file the other strategies share); part of the job identity
    memory_by_strategy: Dict[str, Optional[str]] = field(default_factory=dict)
    run_name: Optional[str] = None
    runs_dir: str = "runs"
    concurrency: int = 4
    progress: bool = True
    retry_infra: bool = True  # on resume, episodes recorded as `infra` run again (attempt 2, 3, ...)
    allow_in_sample: bool = False  # evaluate on tasks the memory learned from (rows labelled IN-SAMPLE)
    analysis: Dict[str, Any] = field(default_factory=dict)  # experiment configs name their analysis view here
    # USD cap on what the run directory spends (recorded costs, every role); null = none (docs/cost.md)
    budget_usd: Optional[float] = None
    sequential: SequentialConfig = field(default_factory=SequentialConfig)


SECTIONS = {"model": ModelSettings, "strategy": StrategySettings, "benchmark": BenchmarkSettings,
            "executor": ExecutorSettings}
SCHEMAS = {ModelSettings: ModelConfig, StrategySettings: StrategyConfig, BenchmarkSettings: BenchmarkConfig,
           ExecutorSettings: ExecutorConfig, JobSettings: RunConfig}  # tests/test_typed_middle.py: same fields
_ENV_REF = re.compile(r"^\$\{oc\.env:([^,}]+)(?:,([^}]*))?\}$")
S = TypeVar("S")


def to_settings(cfg: DictConfig) -> JobSettings:
    """The composed config of a job as its frozen settings: the one place a config node is read."""
    resolved = cast(dict[str, Any], OmegaConf.to_container(cfg, resolve=True))
    raw = cast(dict[str, Any], OmegaConf.to_container(cfg, resolve=False))
    parts: dict[str, Any] = {name: _section(kind, resolved[name], raw[name]) for name, kind in SECTIONS.items()}
    return _section(JobSettings, resolved, raw, **parts)


def section_settings(kind: type[S], values: Mapping[str, object] | DictConfig | ListConfig | None = None) -> S:
    """One section's settings from its schema's defaults and `values` (scripts and tests that build a benchmark
    or a model outside a sweep)."""
    node = OmegaConf.merge(OmegaConf.structured(SCHEMAS[kind]), values or {})
    return _section(kind, cast(dict[str, object], OmegaConf.to_container(node, resolve=True)),
                    cast(dict[str, object], OmegaConf.to_container(node, resolve=False)))


def snapshot_section(kind: type[S], values: Mapping[str, object]) -> S:
    """One section's settings from a run's config snapshot (config.yaml), keys it no longer has left out."""
    return section_settings(kind, {k: v for k, v in values.items() if k in kind.__dataclass_fields__})  # type: ignore[attr-defined]  # S is any settings dataclass


def _section(kind: type[S], resolved: Mapping[str, object], raw: Mapping[str, object], **given: object) -> S:
    names = [f for f in kind.__dataclass_fields__ if f not in given]  # type: ignore[attr-defined]  # S is any settings dataclass
    return kind(**given, **{name: _value(resolved[name], raw[name]) for name in names})


def _value(resolved: object, raw: object) -> object:
    """A table keeps its `${oc.env:VAR}` values as references (read where they are used); the rest is frozen."""
    return FrozenMap(cast(dict[str, object], _env_refs(resolved, raw))) if isinstance(resolved, dict) \
        else freeze(resolved)


def _env_refs(resolved: object, raw: object) -> object:
    if isinstance(raw, str) and (m := _ENV_REF.match(raw)):
        return EnvRef(m.group(1), m.group(2))
    if isinstance(resolved, dict) and isinstance(raw, dict):
        return {k: _env_refs(v, raw.get(k)) for k, v in resolved.items()}
    if isinstance(resolved, list) and isinstance(raw, list) and len(resolved) == len(raw):
        return [_env_refs(v, r) for v, r in zip(resolved, raw)]
    return resolved


def register_schemas() -> None:
    ConfigStore.instance().store(name="schema", node=RunConfig)


def _gguf_alias(value: str) -> str:
    from harness.serving.local_server import alias_for

    return alias_for(str(value))


# model/local.yaml names the served model after its GGUF file: name: openai/${gguf_alias:${.gguf}}
OmegaConf.register_new_resolver("gguf_alias", _gguf_alias, replace=True)


def register_plugin_benchmarks(names: List[str], config_dir: str, default_placement: Callable[[str], str]) -> None:
    """Entry-point benchmarks without a YAML file of their own become `benchmark=` choices too, placed where
    their adapter says by default (`default_placement(name)`, from harness/benchmarks/registry.py: the caller
    passes it, so the config layer imports no benchmark)."""
    cs = ConfigStore.instance()
    have = {p.stem for p in (Path(config_dir) / "benchmark").glob("*.yaml")}
    for name in names:
        if name not in have:
            node = BenchmarkConfig(name=name, domain=name, placement=default_placement(name))
            cs.store(group="benchmark", name=name, node=node)


def register_plugin_strategies(names: List[str], config_dir: str) -> None:
    """Entry-point strategies without a YAML file of their own become group options too."""
    cs = ConfigStore.instance()
    have = {p.stem for p in (Path(config_dir) / "strategy").glob("*.yaml")}
    for name in names:
        if name not in have:
            cs.store(group="strategy", name=name, node=StrategyConfig(name=name))
