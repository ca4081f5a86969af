"""The one place a job is checked: `prepare(settings)` runs every check Hydra's type validation cannot do, then
resolves the job (harness/runner/job.py: its benchmark validated, its memory's provenance checked), all before
anything is written. The CLI (harness/run.py), ACE's adaptation and the scripts prepare their jobs here."""

from __future__ import annotations

import os
import re
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Optional, Sequence

from memory_kit.memory_file import load_memory
import strategies
from harness import benchmarks
from harness.assembly import options as assembly_options
from harness.config import ExecutorConfig
from harness.settings import MISSING_VALUE, ExecutorSettings, JobSettings

if TYPE_CHECKING:
    from harness.runner import Job

TOOL_MODES = ("native", "prompted", "auto")
_HOST_PORT = re.compile(r"^[\w.\-]+:\d{1,5}$")


class ConfigError(ValueError):
    pass


def prepare(s: JobSettings, sweep: Optional[Sequence[str]] = None) -> Job:
    """The checked, resolved job; ConfigError (one line naming the key) otherwise. `sweep`: the strategies of the
    whole sweep (their options are not typos for this job's strategy)."""
    try:
        check_executor(s.executor)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    if s.strategy.name not in strategies.available():
        raise ConfigError(f"unknown strategy {s.strategy.name!r}; available: {', '.join(strategies.available())}")
    try:  # each job's options against its strategy's declared options (names, types, bounds)
        strategies.validate_options(s.strategy.name, s.strategy_options(), list(sweep or [s.strategy.name]))
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"strategy.options: {exc}") from None
    b = s.benchmark
    try:
        assembly_options.check(b.placement, b.context_policy, b.answer_mode,
                               placements=benchmarks.adapter_class(b.name).placements)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    for key, value in (("trials", b.trials), ("benchmark.orders", b.orders), ("concurrency", s.concurrency)):
        if value < 1:
            raise ConfigError(f"{key} must be >= 1, got {value}")
    if b.limit is not None and b.limit < 1:
        raise ConfigError(f"benchmark.limit must be >= 1, got {b.limit}")
    check_sequential(s)
    check_memory_by_strategy(s)
    memory = s.job_memory
    if memory and not Path(memory).is_file():
        raise ConfigError(f"memory file not found: {memory}")
    if memory:
        load_memory(memory)  # a malformed artifact fails here with file:line
    try:  # an artifact of another kind than the strategy starts from (reasoning_bank given a guideline file)
        strategies.check_memory(s.strategy.name, memory)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    from harness.runner import resolve

    try:  # the benchmark's validate(); memory learned from these tasks, or labels off train: refused
        job = resolve(s)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    check_model(s)
    from harness.serving.credentials import ModelCheckError, check_models

    judge_used = job.adapter().needs_judge()
    try:  # every model of the job (agent, user simulator, judge): routable, and its key in the environment
        check_models(s, judge_used=judge_used)
    except ModelCheckError as exc:
        raise ConfigError(str(exc)) from None
    check_prices(s, judge_used=judge_used)
    return job


def check_sequential(s: JobSettings) -> None:
    """sequential.until / wave / delta (harness/waves.py)."""
    seq = dict(s.sequential)
    if seq.get("until", "fixed") not in ("fixed", "decided"):
        raise ConfigError(f"sequential.until must be fixed or decided, got {seq['until']!r}")
    if int(seq.get("wave", 10)) < 1 or not float(seq.get("delta", 5.0)) > 0:
        raise ConfigError(f"sequential.wave must be >= 1 and sequential.delta > 0, got {seq.get('wave')} and "
                          f"{seq.get('delta')}")


def check_executor(ex: ExecutorSettings) -> None:
    """Semantic checks of `executor.*` (the schema already refused unknown keys and wrong types)."""
    from harness.runner.executors import EXECUTORS

    if ex.name not in EXECUTORS:
        raise ValueError(f"executor.name={ex.name!r}; valid: {', '.join(EXECUTORS)}")
    if ex.name == "threads":
        default = ExecutorConfig()  # the schema's defaults: a threads job leaves every Ray key there
        set_keys = [k for k in ("address", "num_cpus", "cpus_per_episode", "max_retries")
                    if getattr(ex, k) != getattr(default, k)]
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


def check_model(s: JobSettings) -> None:
    m = s.model
    if m.tool_mode not in TOOL_MODES:
        raise ConfigError(f"model.tool_mode={m.tool_mode!r}; valid: {', '.join(TOOL_MODES)}")
    if m.gguf:
        from harness.serving.local_server import LocalServerError, resolve_gguf, runtime_available

        if not runtime_available():
            raise ConfigError("model.gguf is set but llama-cpp-python is not installed: run `make setup`")
        try:
            resolve_gguf(m.gguf)
        except LocalServerError as exc:
            raise ConfigError(f"model.gguf: {exc}") from None
    if m.name.startswith("memdeliv-simulated/"):
        from harness.scripted import simulated_world

        try:
            simulated_world.profile(m.profile or "")
            simulated_world.load_world(m.world or "")
        except (simulated_world.WorldError, ValueError) as exc:
            raise ConfigError(str(exc)) from None
    if m.api_key_env and not os.environ.get(m.api_key_env):
        raise ConfigError(f"model.api_key_env={m.api_key_env} but that variable is not set")


def check_prices(s: JobSettings, judge_used: bool) -> None:
    """model.price_per_mtok_* well formed; with budget_usd, every model of the job priced (LiteLLM's map or the
    override), docs/cost.md. Any executor: the budget admits episodes in this process, Ray's too."""
    from memory_kit import prices

    override = s.model.price_override()
    try:
        prices.check_override(override)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    if s.budget_usd is None:
        return
    if not s.budget_usd > 0:
        raise ConfigError(f"budget_usd must be > 0 (USD), got {s.budget_usd}")
    names = dict.fromkeys([s.model.name, s.model.user_name or s.model.name])
    if judge_used and s.benchmark.judge_model:
        names.setdefault(s.benchmark.judge_model)
    for name in names:
        if prices.price_of(name, override if name == s.model.name else None) is None:
            raise ConfigError(f"budget_usd is set but {name} has no price in LiteLLM's map, so spending could not "
                              "be counted: give model.price_per_mtok_in and model.price_per_mtok_out")


def check_memory_by_strategy(s: JobSettings) -> None:
    """memory_by_strategy: known strategy names, every entry given (an experiment may demand one with ???),
    and the job's own entry an artifact its design declares it can start from (ACE: a playbook from `make ace`)."""
    table = s.memory_by_strategy
    for name, path in table.items():
        if name not in strategies.available():
            raise ConfigError(f"memory_by_strategy.{name}: unknown strategy; available: "
                              f"{', '.join(strategies.available())}")
        if path == MISSING_VALUE:
            raise ConfigError(f"memory_by_strategy.{name} must be set (this experiment gives {name!r} its own "
                              f"memory): pass memory_by_strategy.{name}=<path>")
    own = table.get(s.strategy.name)
    if own:  # the job's own entry: an artifact its design may start from (strategies/declaration.py check_entry)
        if not Path(own).is_file():
            raise ConfigError(f"memory file not found: memory_by_strategy.{s.strategy.name}={own}")
        try:
            strategies.declaration(s.strategy.name).check_entry(own)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None


# The CLI parks each job it checked; the launch claims it. Kept in this imported module, not in harness/run.py
# (run as __main__): a process launcher (joblib, submitit) pickles the launched function by value there, and a
# lock cannot be pickled.
_parked: dict[JobSettings, Job] = {}  # a job's settings -> the Job the CLI checked while checking the sweep
_parked_lock = threading.Lock()


def park(s: JobSettings, job: Job) -> None:
    with _parked_lock:
        _parked[s] = job


def claim(s: JobSettings) -> Job:
    """The launched job: the one checked for these settings, when its memory artifact is unchanged since."""
    from harness.runner import resolve
    from harness.runner.job import file_digest

    with _parked_lock:
        parked = _parked.pop(s, None)
    if parked is not None and parked.identity["memory"]["sha256_16"] == file_digest(parked.memory):
        return parked
    return resolve(s)
