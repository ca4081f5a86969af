"""`python -m harness.run [-m] key=value ...`: the Hydra app.

Before Hydra launches anything, every job of the sweep is composed and checked here, so a bad choice
or a wrong type exits 2 with the valid choices and no run directory is created. Secrets given on the
command line are moved into the environment and referenced by interpolation, so neither Hydra's
multirun.yaml nor our config snapshot can hold them.
"""

from __future__ import annotations

import itertools
import os
import re
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HYDRA_FULL_ERROR", "0")

import hydra
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import OverrideParseException
from omegaconf import DictConfig, OmegaConf

import strategies
from harness.assembly import options as assembly_options
from harness import benchmarks, secrets
from foundation.terminal import wrap
from harness.config import (CONFIG_DIR, TOOL_MODES, job_memory, register_plugin_benchmarks,
                             register_plugin_strategies, register_schemas, strategy_options)

_OVERRIDE = re.compile(r"^(\+{0,2})([\w.\-]+)=(.+)$")


class ConfigError(ValueError):
    pass


def fail(message: str) -> None:
    print(f"memdeliv: config error: {message}", file=sys.stderr)
    raise SystemExit(2)


def protect_secrets(overrides: list[str]) -> list[str]:
    """A secret on the command line (a credential key by exact name, or a value shaped like a key, see
    harness.secrets) moves into the environment; the override refers to it by interpolation."""
    out = []
    for i, item in enumerate(overrides):
        m = _OVERRIDE.match(item)
        if m and not m.group(3).startswith("${") and (secrets.is_secret_key(m.group(2))
                                                      or secrets.looks_secret(m.group(3))):
            var = f"MEMDELIV_SECRET_{i}_KEY"
            os.environ[var] = m.group(3).strip("'\"")
            item = f"{m.group(1)}{m.group(2)}='${{oc.env:{var}}}'"
        out.append(item)
    return out


def expand_sweeps(overrides: list[str]) -> list[list[str]]:
    """One override list per job of a multirun (choice sweeps: a,b,c)."""
    parsed = OverridesParser.create().parse_overrides(overrides=overrides)
    axes: list[list[str]] = []
    for override in parsed:
        key = override.get_key_element()
        if override.is_sweep_override():
            axes.append([f"{key}={v}" for v in override.sweep_string_iterator()])
        else:
            axes.append([str(override.input_line)])
    return [list(combo) for combo in itertools.product(*axes)] or [[]]


def with_config_sweeps(overrides: list[str]) -> list[str]:
    """Sweep axes an experiment config declares in hydra.sweeper.params join the validated sweep, as they join
    Hydra's (the command line wins on the same key); composition errors are left for validate() to report."""
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=CONFIG_DIR, version_base=None):
            cfg = compose(config_name="config", overrides=expand_sweeps(overrides)[0], return_hydra_config=True)
    except Exception:
        return overrides
    finally:
        GlobalHydra.instance().clear()
    params = OmegaConf.select(cfg, "hydra.sweeper.params") or {}
    given = {o.split("=", 1)[0].lstrip("+~") for o in overrides}
    return overrides + [f"{k}={v}" for k, v in params.items() if k.lstrip("+~") not in given]


def check_job(cfg: DictConfig, sweep: list[str] | None = None) -> None:
    """Semantic checks Hydra's type validation cannot do; all before anything is written. `sweep`: the
    strategies of the whole sweep (their options are not typos for this job's strategy). The job is resolved
    here (harness/runner/job.py: its benchmark validated, its memory's provenance checked) and parked for the
    launch that follows, which runs that very Job."""
    from harness.runner import executors  # harness.runner (LiteLLM's seconds of import) only once the cheap checks pass

    try:
        executors.check_options(cfg.executor)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    if cfg.strategy.name not in strategies.available():
        raise ConfigError(f"unknown strategy {cfg.strategy.name!r}; available: {', '.join(strategies.available())}")
    try:  # a strategy checks its own options (names, types, ranges) through its validate_options hook
        strategies.validate_options(cfg.strategy.name, strategy_options(cfg),
                                    sweep or [cfg.strategy.name])
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"strategy.options: {exc}") from None
    try:
        assembly_options.check(cfg.benchmark.placement, cfg.benchmark.context_policy, cfg.benchmark.answer_mode,
                               placements=benchmarks.adapter_class(str(cfg.benchmark.name)).placements)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    for field in ("trials", "concurrency"):
        node = cfg.benchmark if field == "trials" else cfg
        if node[field] < 1:
            raise ConfigError(f"{field} must be >= 1, got {node[field]}")
    if cfg.benchmark.limit is not None and cfg.benchmark.limit < 1:
        raise ConfigError(f"benchmark.limit must be >= 1, got {cfg.benchmark.limit}")
    check_memory_by_strategy(cfg)
    memory = job_memory(cfg)
    if memory and not Path(memory).is_file():
        raise ConfigError(f"memory file not found: {memory}")
    if memory:
        strategies.load_memory(memory)  # a malformed artifact fails here with file:line
    from harness.runner import resolve

    try:  # the benchmark's validate(); memory learned from these tasks, or labels off train: refused
        bench = resolve(cfg, park=True).benchmark
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    if cfg.model.tool_mode not in TOOL_MODES:
        raise ConfigError(f"model.tool_mode={cfg.model.tool_mode!r}; valid: {', '.join(TOOL_MODES)}")
    if cfg.model.gguf:
        from harness.serving.local_server import LocalServerError, resolve_gguf, runtime_available

        if not runtime_available():
            raise ConfigError("model.gguf is set but llama-cpp-python is not installed: run `make setup`")
        try:
            resolve_gguf(cfg.model.gguf)
        except LocalServerError as exc:
            raise ConfigError(f"model.gguf: {exc}") from None
    if cfg.model.name.startswith("memdeliv-simulated/"):
        from harness.scripted import simulated_world

        try:
            simulated_world.profile(cfg.model.profile or "")
            simulated_world.load_world(cfg.model.world or "")
        except (simulated_world.WorldError, ValueError) as exc:
            raise ConfigError(str(exc)) from None
    if cfg.model.api_key_env and not os.environ.get(cfg.model.api_key_env):
        raise ConfigError(f"model.api_key_env={cfg.model.api_key_env} but that variable is not set")
    from harness.serving.credentials import ModelCheckError, check_models

    try:  # every model of the job (agent, user simulator, judge): routable, and its key in the environment
        check_models(cfg, judge_used=bench.needs_judge())
    except ModelCheckError as exc:
        raise ConfigError(str(exc)) from None
    check_prices(cfg, judge_used=bench.needs_judge())


def check_prices(cfg: DictConfig, judge_used: bool) -> None:
    """model.price_per_mtok_* well formed; with budget_usd, every model of the job priced (LiteLLM's map or the
    override), docs/cost.md. Any executor: the budget admits episodes in this process, Ray's too."""
    from strategies import prices

    try:
        prices.check_override(cfg.model)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    budget = cfg.get("budget_usd")
    if budget is None:
        return
    if not budget > 0:
        raise ConfigError(f"budget_usd must be > 0 (USD), got {budget}")
    models = {cfg.model.name: cfg.model, cfg.model.user_name or cfg.model.name: None}
    if judge_used and cfg.benchmark.get("judge_model"):
        models.setdefault(cfg.benchmark.judge_model, None)
    for name in models:
        override = cfg.model if name == cfg.model.name else None
        if prices.price_of(name, override) is None:
            raise ConfigError(f"budget_usd is set but {name} has no price in LiteLLM's map, so spending could not "
                              "be counted: give model.price_per_mtok_in and model.price_per_mtok_out")


def check_memory_by_strategy(cfg: DictConfig) -> None:
    """memory_by_strategy: known strategy names, every entry given (an experiment may demand one with ???),
    and ACE's entry an ACE playbook learned by `make ace`, never a plain guideline file."""
    table = cfg.get("memory_by_strategy") or {}
    for name in table:
        if name not in strategies.available():
            raise ConfigError(f"memory_by_strategy.{name}: unknown strategy; available: "
                              f"{', '.join(strategies.available())}")
        if OmegaConf.is_missing(table, name):
            raise ConfigError(f"memory_by_strategy.{name} must be set (this experiment gives {name!r} its own "
                              f"memory): pass memory_by_strategy.{name}=<path>")
    own = table.get("ace") if "ace" in table else None
    if own and cfg.strategy.name == "ace":
        from strategies.ace.playbook import KIND, artifact_kind

        if not Path(own).is_file():
            raise ConfigError(f"memory file not found: memory_by_strategy.ace={own}")
        if artifact_kind(own) != KIND:
            raise ConfigError(f"memory_by_strategy.ace={own} is not an ACE playbook (_meta.kind {KIND!r}); "
                              "learn one with `make ace` on train")


def register_plugins() -> None:
    """The schema, and a config node for every entry-point strategy and benchmark without a YAML file."""
    register_schemas()
    register_plugin_strategies(strategies.available(), CONFIG_DIR)
    register_plugin_benchmarks(benchmarks.available(), CONFIG_DIR,
                               lambda name: benchmarks.adapter_class(name).default_placement)


def compose_job(overrides: list[str]) -> DictConfig:
    """One job's config exactly as the CLI composes it (for scripts and tests that call run_job)."""
    register_plugins()
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=CONFIG_DIR, version_base=None):
            return compose(config_name="config", overrides=list(overrides))
    finally:
        GlobalHydra.instance().clear()


def validate(job_overrides: list[list[str]]) -> None:
    from harness.config_errors import describe

    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=CONFIG_DIR, version_base=None):
        cfgs = []
        for overrides in job_overrides:
            try:
                cfgs.append(compose(config_name="config", overrides=overrides))
            except Exception as exc:  # Hydra / OmegaConf composition and type errors: one line, key and type
                fail(describe(exc))
        sweep = sorted({cfg.strategy.name for cfg in cfgs})  # an option one of them takes is no typo for the rest
        for cfg in cfgs:
            try:
                check_job(cfg, sweep)
            except ConfigError as exc:
                fail(str(exc))
            except strategies.MemoryFileError as exc:
                fail(f"bad memory file: {exc}")
            except Exception as exc:
                fail(describe(exc))
    GlobalHydra.instance().clear()


@hydra.main(config_path="../configs", config_name="config", version_base=None)
def _job(cfg: DictConfig) -> Any:
    from harness.serving.faults import ProviderUnusable
    from harness.runner import job_key, run_job
    from harness.store import RunStoreError

    try:
        summary = run_job(cfg)
    except RunStoreError as exc:  # the job is running elsewhere, or the run holds another setup: nothing written
        print(f"memdeliv: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    except ProviderUnusable as exc:  # before any episode ran (building the strategy, replaying its updates)
        summary = {"job": job_key(cfg), "stopped": {"reason": "provider_unusable", "detail": str(exc)}}
    stop = summary.get("stopped") or {}
    if stop.get("reason") in ("provider_unusable", "provider_unreachable", "interrupted"):
        why = "interrupted" if stop["reason"] == "interrupted" else stop["detail"]
        print(f"memdeliv: stopped {summary['job']}: {why}. Episodes recorded so far stay; "
              f"{'' if stop['reason'] == 'interrupted' else 'after the fix, '}rerun with run_name={cfg.run_name} "
              "to resume", file=sys.stderr)
        raise SystemExit(130 if stop["reason"] == "interrupted" else 2)  # a budget's stop ends the job as usual
    report_job(summary)
    return summary


def report_job(summary: dict[str, Any]) -> None:
    """The end-of-job line, and a warning when this model's strategies have different infra rates so far."""
    errors = ", ".join(f"{label} {n}" for label, n in summary["errors"].items()) or "none"
    # two lines, each wrapped to a terminal's 160 columns
    print(wrap(f"memdeliv: {summary['job']}: ran {summary['ran']}, resumed past {summary['skipped']} -> "
               f"{summary['run_dir']}\n  errors: {errors} (each a failed episode, infra too: tau2-bench's leaderboard "
               f"convention); infra rerun from before {summary.get('infra_rerun', 0)}; provider retries "
               f"{summary.get('retried', 0)}", "    "))
    if warning := summary.get("infra_warning"):
        print(wrap(f"memdeliv: warning: {warning}"), file=sys.stderr)


def checked_command(argv: list[str]) -> tuple[list[str], list[str]]:
    """Everything main() checks, nothing run or written: (flags, overrides) as Hydra will get them, or exit 2
    with the reason. tests/test_documented_commands.py passes every documented command line through it."""
    flags = [a for a in argv if a.startswith("-")]
    overrides = protect_secrets([a for a in argv if not a.startswith("-")])
    register_plugins()
    if not any(o.split("=", 1)[0].lstrip("+") == "run_name" for o in overrides):
        overrides.append(f"run_name={datetime.now().strftime('%Y%m%d-%H%M%S')}")
    if not any(f in flags for f in ("--help", "-h", "--hydra-help", "--info", "-i", "--cfg", "-c")):
        multirun = any(f in flags for f in ("-m", "--multirun"))
        try:
            jobs = expand_sweeps(with_config_sweeps(overrides) if multirun else overrides)
        except OverrideParseException as exc:
            from harness.config_errors import unparsable

            fail(unparsable(overrides, exc))
        validate(jobs)
    return flags, overrides


def main(argv: list[str] | None = None) -> None:
    flags, overrides = checked_command(list(sys.argv[1:] if argv is None else argv))
    sys.argv = [sys.argv[0], *flags, *overrides]
    _job()


if __name__ == "__main__":
    main()
