"""`python -m harness.run [-m] key=value ...`: the Hydra app.

Before Hydra launches anything, every job of the sweep is composed and checked here, so a bad choice
or a wrong type exits 2 with the valid choices and no run directory is created. Secrets given on the
command line are moved into the environment and referenced by interpolation, so neither Hydra's
multirun.yaml nor our config snapshot can hold them.
"""

from __future__ import annotations

import os
import re
import sys
from datetime import datetime
from typing import TYPE_CHECKING, Any, Callable

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HYDRA_FULL_ERROR", "0")

import hydra
from hydra import compose, initialize_config_dir
from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra.core.global_hydra import GlobalHydra
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import OverrideParseException
from omegaconf import DictConfig, OmegaConf

from memory_kit.memory_file import MemoryFileError
import strategies
from harness import benchmarks, secrets
from foundation.terminal import wrap
from harness.checks import ConfigError, claim, park, prepare
from harness.config import (CONFIG_DIR, register_plugin_benchmarks, register_plugin_strategies, register_schemas,
                            to_settings)
from harness.settings import JobSettings

if TYPE_CHECKING:
    from harness.runner import Job

_OVERRIDE = re.compile(r"^(\+{0,2})([\w.\-]+)=(.+)$")


def fail(message: str) -> None:
    print(wrap(f"memdeliv: config error: {message}"), file=sys.stderr)  # one message, continuation lines indented
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
    """One override list per job of a multirun, by Hydra's own expansion (its basic sweeper's, the one that
    launches them), so the jobs checked are the jobs Hydra runs."""
    parsed = OverridesParser.create().parse_overrides(overrides=overrides)
    return [list(job) for batch in BasicSweeper.split_arguments(parsed, None) for job in batch] or [[]]


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


def check_job(s: JobSettings, sweep: list[str] | None = None) -> Job:
    """Every check of one job, before anything is written (harness/checks.py); the job it resolved is parked for
    the launch that follows, which runs that very Job."""
    job = prepare(s, sweep)
    park(s, job)
    return job


def register_plugins() -> None:
    """The schema, and a config node for every entry-point strategy and benchmark without a YAML file."""
    register_schemas()
    register_plugin_strategies(strategies.available(), CONFIG_DIR)
    register_plugin_benchmarks(benchmarks.available(), CONFIG_DIR,
                               lambda name: benchmarks.adapter_class(name).default_placement)


def compose_job(overrides: list[str]) -> JobSettings:
    """One job's settings exactly as the CLI composes them (for scripts and tests that call run_job)."""
    register_plugins()
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=CONFIG_DIR, version_base=None):
            return to_settings(compose(config_name="config", overrides=list(overrides)))
    finally:
        GlobalHydra.instance().clear()


def validate(job_overrides: list[list[str]]) -> None:
    from harness.config_errors import describe

    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=CONFIG_DIR, version_base=None):
        jobs = []
        for overrides in job_overrides:
            try:
                jobs.append(to_settings(compose(config_name="config", overrides=overrides)))
            except Exception as exc:  # Hydra / OmegaConf composition and type errors: one line, key and type
                fail(describe(exc))
        sweep = sorted({s.strategy.name for s in jobs})  # an option one of them takes is no typo for the rest
        for s in jobs:
            try:
                check_job(s, sweep)
            except ConfigError as exc:
                fail(str(exc))
            except MemoryFileError as exc:
                fail(f"bad memory file: {exc}")
            except Exception as exc:
                fail(describe(exc))
    GlobalHydra.instance().clear()


@hydra.main(config_path=CONFIG_DIR, config_name="config", version_base=None)  # absolute: also run in-process
def _job(cfg: DictConfig) -> Any:
    from harness.serving.faults import ProviderUnusable
    from harness.runner import run_job
    from harness.store import RunStoreError

    job = claim(to_settings(cfg))
    try:
        summary = run_job(job)
    except RunStoreError as exc:  # the job is running elsewhere, or the run holds another setup: nothing written
        print(f"memdeliv: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    except ProviderUnusable as exc:  # before any episode ran (building the strategy, replaying its updates)
        summary = {"job": job.key, "stopped": {"reason": "provider_unusable", "detail": str(exc)}}
    stop = summary.get("stopped") or {}
    if stop.get("reason") in ("provider_unusable", "provider_unreachable", "interrupted"):
        why = "interrupted" if stop["reason"] == "interrupted" else stop["detail"]
        print(f"memdeliv: stopped {summary['job']}: {why}. Episodes recorded so far stay; "
              f"{'' if stop['reason'] == 'interrupted' else 'after the fix, '}rerun with run_name={job.run_name} "
              "to resume", file=sys.stderr)
        raise SystemExit(130 if stop["reason"] == "interrupted" else 2)  # a budget's stop ends the job as usual
    report_job(summary)
    return summary


def report_job(summary: dict[str, Any]) -> None:
    """The end-of-job line, and a warning when this model's strategies have different infra rates so far."""
    errors = ", ".join(f"{label} {n}" for label, n in summary["errors"].items()) or "none"
    # the job's errors, a resume's earlier episodes included, as its progress line counts them
    over = f" over all {summary['ran'] + summary['skipped']} episodes" if summary["skipped"] else ""
    # two lines, each wrapped to a terminal's 160 columns
    print(wrap(f"memdeliv: {summary['job']}: ran {summary['ran']}, resumed past {summary['skipped']} -> "
               f"{summary['run_dir']}\n  errors{over}: {errors} (each a failed episode, infra too: tau2-bench's "
               f"leaderboard convention); infra rerun from before {summary.get('infra_rerun', 0)}; provider retries "
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


def exit_status(entry: Callable[[list[str]], Any], argv: list[str]) -> int:
    """An entry point's (`main(argv)`) exit status as its own process would end with it, run in this process: the
    memory builders' collection and a sequential sweep's waves run harness.run's main so, as a second interpreter
    would import LiteLLM, tau2 and Hydra again (seconds) to run the same code. sys.argv as it was afterwards
    (main hands Hydra its arguments there)."""
    saved = list(sys.argv)
    try:
        sys.argv = [saved[0] if saved else "memdeliv", *argv]
        code = entry(argv)
    except SystemExit as exc:
        code = exc.code
    finally:
        sys.argv = saved
    return code if isinstance(code, int) else (0 if code is None else 1)


if __name__ == "__main__":
    main()
