"""Shared helpers: run the CLI as a user would (its own process, or its main in this one), or compose a config and run
one job in-process."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

REPO = Path(__file__).resolve().parent.parent
SAMPLE_MEMORY = REPO / "strategies" / "samples" / "tau2_sample.jsonl"
# A subprocess timeout is a ceiling for a hung process, never a speed check: generous enough that a run on a machine
# loaded several times over (load 10 on 2 cores) still finishes under it. Timings belong in bench/.
HUNG_S = 1800
# `make test` runs files on 2-4 workers (pytest-xdist, --dist loadfile, one file per worker at a time): the longest
# files (`pytest --durations`) go first, so that no worker ends the run on one of them alone
LONGEST_FIRST = ("test_documented_outputs.py", "test_documented_outputs_later.py", "test_local_model.py",
                 "test_appworld_engine.py", "test_ray_executor.py", "test_launchers.py", "test_ace_online_resume.py",
                 "test_provider_rejections.py", "test_memory_provenance.py", "test_selfcheck.py", "test_kill_resume.py",
                 "test_tau2_results_files.py", "test_strategy_options.py")


# `make test-quick` (the edit loop, docs/development.md) runs what is left after these: whole files that run
# documented commands, a real model server, Ray, a browser or many CLI processes, and single tests that take seconds
# (`pytest --durations`); they get the `slow` mark here, so a test file needs no edit to be placed. An entry that
# names no test file or function here stops every run (a renamed test must not slip into the quick loop).
SLOW_FILES = (
    "test_ace_online_resume.py", "test_ace_reference.py", "test_ace_retrieval.py", "test_analysis_outputs.py",
    "test_appworld_engine.py", "test_budget.py", "test_compare_notebook.py", "test_config_errors.py",
    "test_decision_calibration.py", "test_decision_edges.py", "test_documented_commands.py",
    "test_documented_outputs.py", "test_documented_outputs_later.py", "test_dose.py", "test_exp_rag.py",
    "test_harm.py", "test_ibm_pairing.py", "test_identity_gaps.py", "test_job_lock.py", "test_kill_resume.py",
    "test_launchers.py", "test_learner_faults.py", "test_local_model.py", "test_memory_provenance.py",
    "test_memory_tokens.py", "test_model_checks.py", "test_noise_floor.py", "test_on_demand.py",
    "test_online_learner_resume.py", "test_online_streams.py", "test_parallel_jobs.py", "test_plugin_benchmark.py",
    "test_plugin_guide.py", "test_power.py", "test_provider_rejections.py", "test_ray_executor.py",
    "test_ray_quiet_start.py", "test_readme_quickstart.py", "test_reasoning_bank.py", "test_refusals.py",
    "test_report_browser.py", "test_robustness.py", "test_secret_echo.py", "test_secrets.py", "test_selfcheck.py",
    "test_simulated_draw.py", "test_simulated_world.py", "test_stop_reasons.py", "test_strategy_options.py",
    "test_sweep_passk.py", "test_tau2_fresh_db.py", "test_tau2_results_files.py", "test_tau2_task_sets.py",
    "test_train_start.py", "test_unreachable_provider.py", "test_viewer.py", "test_viewer_browser.py",
)
SLOW_TESTS = (
    "test_ace_runs.py::test_offline_adaptation_loop_with_scripted_roles",
    "test_analysis_experiments.py::test_experiment_sweep_runs_with_command_line_winning",
    "test_assembly.py::test_priority_drop_keeps_a_long_episode_under_the_window_with_a_code_made_summary",
    "test_assembly_experiment.py::test_assembly_sweep_keeps_jobs_apart_and_tables_group_by_the_axes",
    "test_awm.py::test_workflows_come_from_successful_train_episodes_only",
    "test_build_memory_cli.py::test_collect_extract_consolidate_offline",
    "test_controls.py::test_decomposition_recovers_the_planted_truth",
    "test_core_retrieval.py::test_kana_example_core_plus_refund_not_kana",
    "test_dynamic_cheatsheet.py::test_retrieval_synthesis_runs_on_the_simulated_world_one_curator_call_per_episode",
    "test_fault_injection.py::test_injected_faults_are_retried_counted_and_resumed",
    "test_lint_in_ci.py::test_the_configured_checks_catch_planted_mistakes",
    "test_no_leakage.py::test_hidden_scenario_never_reaches_strategy_prompt_or_record",
    "test_row.py::test_a_job_reads_its_results_once_and_checks_its_memory_once",
    "test_store_only_writer.py::test_only_harness_store_opens_results_or_retries_for_writing",
    "test_strategy_calls.py::test_ace_online_rows_carry_each_updates_reflector_and_curator",
    "test_table_width.py::test_sweep_table_fits_160_columns_and_wide_keeps_everything",
    "test_task_orders.py::test_each_stream_learns_in_its_order_and_the_table_prints_every_order",
    "test_verdict.py::test_under_equal_strategies_the_band_and_the_harm_verdict_name_noise_at_their_rate",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: the rest keep their order
    for item in items:
        if item.path.name in SLOW_FILES or f"{item.path.name}::{item.originalname}" in SLOW_TESTS:
            item.add_marker(pytest.mark.slow)


def pytest_configure(config: pytest.Config) -> None:
    """A SLOW_FILES / SLOW_TESTS name that is no test file or test function here stops the run (read from the files,
    so a test skipped where it runs still counts as there)."""
    here = Path(__file__).resolve().parent
    stale = [name for name in SLOW_FILES if not (here / name).is_file()]
    for entry in SLOW_TESTS:
        file, test = entry.split("::")
        if not (here / file).is_file() or f"def {test}(" not in (here / file).read_text(encoding="utf-8"):
            stale.append(entry)
    if stale:
        raise pytest.UsageError(f"tests/conftest.py SLOW_FILES / SLOW_TESTS name no test here: {stale}")


def unwrapped(text: str) -> str:
    """Messages wrapped to the terminal's width (foundation.terminal.wrap: continuation lines indented two spaces)
    as one line each, so a test reads a message whole; text with a traceback is left as it is (several lines)."""
    return text if "Traceback" in text else text.replace("\n  ", " ")


def run_cli(*overrides: str, runs_dir: Path, multirun: bool = False, env: dict | None = None,
            timeout: float = HUNG_S) -> subprocess.CompletedProcess:
    """The CLI as a user runs it; stderr `unwrapped`."""
    cmd = [sys.executable, "-m", "harness.run", *(["-m"] if multirun else []), f"runs_dir={runs_dir}",
           "progress=false", *overrides]
    full_env = {**os.environ, **(env or {})}
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=timeout, env=full_env)
    proc.stderr = unwrapped(proc.stderr)
    return proc


def main_in_process(module: str, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """`python -m module args` run in this process: the module's main as its own process would run it
    (harness.run.exit_status), from the repository, `env` set for the run only; stdout and stderr (`unwrapped`) as
    the main printed them. It saves a new interpreter's imports of LiteLLM, tau2 and Hydra (about 5 s a start).
    A subprocess stays where a test is about the process: the exit status a shell sees, a signal, an environment of
    its own (installed plugins, credentials that must reach no stream: a logger made before the run writes past this
    capture)."""
    import importlib

    from harness.run import exit_status

    out, err = io.StringIO(), io.StringIO()
    here, environ = os.getcwd(), dict(os.environ)
    os.chdir(REPO)
    os.environ.update(env or {})
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = exit_status(importlib.import_module(module).main, list(args))
    finally:
        os.chdir(here)
        os.environ.clear()
        os.environ.update(environ)
    return subprocess.CompletedProcess([module, *args], code, out.getvalue(), unwrapped(err.getvalue()))


def run_in_process(*overrides: str, runs_dir: Path, multirun: bool = False,
                   env: dict | None = None) -> subprocess.CompletedProcess:
    """run_cli's command, run in this process (`main_in_process`)."""
    return main_in_process("harness.run", *(["-m"] if multirun else []), f"runs_dir={runs_dir}", "progress=false",
                           *overrides, env=env)


def config_check(capsys: pytest.CaptureFixture[str], *overrides: str, runs_dir: Path,
                 multirun: bool = False) -> tuple[int | None, str]:
    """harness.run's check of a command line (harness.run.checked_command: compose, validate, nothing run or
    written), in this process: (exit code, stderr), exit None when it passes. A second of a test where a `run_cli`
    subprocess takes several; the whole CLI refusing a bad line with no run directory is checked by run_cli tests
    (tests/test_config_errors.py, tests/test_strategy_options.py)."""
    from harness.run import checked_command

    capsys.readouterr()
    try:
        checked_command([*(["-m"] if multirun else []), f"runs_dir={runs_dir}", "progress=false", *overrides])
    except SystemExit as exc:
        return int(exc.code or 0), unwrapped(capsys.readouterr().err)
    return None, unwrapped(capsys.readouterr().err)


def read_records(run_dir: Path) -> list[dict]:
    """The run's rows as a reader asks them by column name (`Row.columns()`, as analysis's frames: a role's usage
    spelled `user_cost_usd`, extras flat), with the `usage` mapping beside."""
    from harness.row import Row

    path = run_dir / "results.jsonl"
    rows = [Row.from_json(line) for line in path.read_text().splitlines() if line.strip()]
    return [{**row.columns(), "usage": {k: dict(v) for k, v in row.usage.items()}} for row in rows]


def compose(*overrides: str):
    """The job settings the CLI would make of these overrides (Hydra's composition, schemas registered)."""
    from hydra import compose as hydra_compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from harness.config import CONFIG_DIR, register_schemas, to_settings

    register_schemas()
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=CONFIG_DIR, version_base=None):
        cfg = hydra_compose(config_name="config", overrides=list(overrides))
    GlobalHydra.instance().clear()
    return to_settings(cfg)


@pytest.fixture
def runs_dir(tmp_path: Path) -> Path:
    return tmp_path / "runs"


@pytest.fixture(scope="session")
def artifact(tmp_path_factory) -> Path:
    """The simulated world's memory artifact (harness.memory.simulated) for the retail test tasks."""
    from harness.memory.simulated import build
    from memory_kit.memory_file import save_memory

    guidelines, meta = build("tau2_retail", "test")
    path = tmp_path_factory.mktemp("world") / "memory.jsonl"
    save_memory(path, guidelines, meta)
    return path


def install_readme_plugin(root: Path) -> Path:
    """strategies/README.md's example as an installed plugin package (its module and a .dist-info declaring the
    `memdeliv.strategies` entry point) in `root/site`, the folder to put on the path."""
    import textwrap

    site = root / "site"
    (site / "my_plugin").mkdir(parents=True)
    example = (REPO / "strategies" / "README.md").read_text().split("```python")[1].split("```")[0]
    (site / "my_plugin" / "__init__.py").write_text(textwrap.dedent(example))
    dist = site / "my_plugin-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: my-plugin\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[memdeliv.strategies]\nfirst_k = my_plugin:FirstK\n")
    return site
