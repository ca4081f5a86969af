"""What the docs tell a user to type must work (README.md, docs/*.md, strategies/README.md; tests/doc_commands.py).

- every `make` command names a target the Makefile has, and sets only variables the Makefile uses;
- every `make sweep` command (its exact harness.run line, from `make -n`) and every `python -m harness.run` line
  passes the harness's own config composition and validation (harness.run.checked_command): nothing is run;
- every command that starts Python names the project's interpreter (`.venv/bin/python`: a bare `python` has no
  hydra unless the reader activated .venv, which no page asks), and the module or script it names exists.
A placeholder the user fills in (`<run>`, `path/to/...`) is replaced by a real file of the same kind; a file an
earlier documented step writes under runs/ (`make simulated-memory`, `make memory`) by one made here.
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
from pathlib import Path

import doc_commands
import pytest
from conftest import REPO, SAMPLE_MEMORY, install_readme_plugin
from doc_commands import ELIDED, DocCommand

COMMANDS = doc_commands.commands()
_PLACEHOLDER = re.compile(r"<[^>]*>|(?:^|/)path/to/|^/models/|^/path/")
_SIMULATED_WORLD = "runs/memory/simulated/memory.jsonl"
# commands the docs show failing on purpose, and the message they must fail with
DOCUMENTED_TO_FAIL = {"docs/failure-accounting.md: make sweep MODEL=nope": "LiteLLM cannot route this model string"}
# what `make setup` installs that a development checkout may lack: the command is skipped here, checked in CI
_NOT_SET_UP = {"llama-cpp-python is not installed": REPO / ".venv" / ".local-model-done",
               "AppWorld's engine venv (.venv-appworld) is not set up": REPO / ".venv-appworld" / ".setup-done"}


def test_the_docs_show_commands():  # the extraction itself works: a broken parser must not pass everything
    makes = [c for c in COMMANDS if c.is_make]
    assert len(makes) > 60 and sum(not c.is_make for c in COMMANDS) > 8
    assert any(c.argv[:2] == ("make", "sweep") and any(a.startswith("ARGS=") for a in c.argv) for c in makes)


@pytest.mark.parametrize("cmd", [c for c in COMMANDS if c.is_make], ids=str)
def test_make_target_and_variables_exist(cmd: DocCommand):
    targets, variables = doc_commands.makefile()
    named, assigned = doc_commands.make_split(cmd)
    assert named or any(w in ELIDED for w in cmd.argv), f"{cmd}: no target"
    assert not set(named) - targets, f"{cmd}: no Makefile target {sorted(set(named) - targets)}"
    assert not set(assigned) - variables, f"{cmd}: the Makefile uses no variable {sorted(set(assigned) - variables)}"


def _filled(argv: list[str], world: str) -> list[str] | None:
    """argv with placeholders and files of earlier documented steps replaced; None: a placeholder we cannot fill."""
    from harness.benchmarks.tau2.data import DATA_DIR

    out = []
    if "model=simulated" in argv and not any(a.startswith("model.world=") for a in argv) \
            and not (REPO / _SIMULATED_WORLD).is_file():  # the config's default world, from `make simulated-memory`
        out.append(f"model.world={world}")
    if "+experiment=robustness" in argv and not any(a.startswith("analysis.robustness.dir=") for a in argv):
        out.append(f"analysis.robustness.dir={_corrupted_series(world)}")  # `make corrupt ... OUT=` wrote them
    if any(a.startswith("strategy=") and "reasoning_bank" in a.split("=", 1)[1].split(",") for a in argv) \
            and not any(a.lstrip("+").startswith("memory_by_strategy.reasoning_bank=") for a in argv):
        out.append(f"+memory_by_strategy.reasoning_bank={_built(world, _BANK)}")  # `make reasoning-bank` wrote it
    for arg in argv:
        if arg in ELIDED:
            continue
        key, sep, value = arg.partition("=")
        name = key.lstrip("+~")
        if sep and value == _SIMULATED_WORLD and not (REPO / value).is_file():
            value = world
        elif sep and name == "model.world" and value.startswith("runs/memory/") and not (REPO / value).is_file():
            value = world  # a simulated-world artifact an earlier documented step writes (make corrupt)
        elif sep and name == "memory" and (_PLACEHOLDER.search(value) or (
                value.startswith("runs/memory/") and not (REPO / value).is_file())):
            value = str(SAMPLE_MEMORY)
        elif sep and name.startswith("memory_by_strategy.") and value.endswith((*_BUILT, _BANK)) \
                and not (REPO / value).is_file():
            value = _built(world, value)  # what `make experiences` / `make awm` write (docs/strategies.md)
        elif sep and name == "model.gguf" and _PLACEHOLDER.search(value):
            value = "bundled"
        elif sep and name == "benchmark.data_dir" and not (REPO / value).is_dir():  # `make tau2-data` (internet)
            value = str(DATA_DIR)
        elif _PLACEHOLDER.search(arg):
            return None
        out.append(f"{key}{sep}{value}")
    return out


def _corrupted_series(world: str) -> str:
    """What `make corrupt ... RATE=0,0.1,0.3,0.5 OUT=<dir>` writes (docs/robustness.md), made from the test's world."""
    from harness.memory.corrupt import Spec, corrupt, series_path

    out = Path(world).parent / "robustness"
    for rate in (0, 0.1, 0.3, 0.5):
        if not series_path(out, "contradict", rate).is_file():
            corrupt(world, series_path(out, "contradict", rate), Spec("contradict", rate))
    return str(out)


_BUILT = ("/experiences.jsonl", "/workflows.jsonl", "/dynamic_cheatsheet/cheatsheet.jsonl")
_BANK = "reasoning_bank/bank.jsonl"


def _built(world: str, value: str) -> str:
    """A one-item artifact of the kind `value` names (memory_kit/experiences.py, strategies/awm/strategy.py,
    strategies/reasoning_bank/strategy.py; `make cheatsheet`'s: strategies/dynamic_cheatsheet/artifact.py)."""
    from strategies import Guideline
    from memory_kit.memory_file import save_memory
    from strategies.dynamic_cheatsheet.artifact import KIND, artifact_rows

    kind = next(k for end, k in (("/experiences.jsonl", "experiences"), ("/workflows.jsonl", "workflows"),
                                 (_BANK, "reasoning_bank"), ("/cheatsheet.jsonl", KIND)) if value.endswith(end))
    out = Path(world).parent / f"{kind}.jsonl"
    rows = artifact_rows(dict.fromkeys(("cumulative", "retrieval_synthesis"), "- [dc-1] x (count: 1)"),
                         [("0", "return an item", "get_order()")]) if kind == KIND else \
        [Guideline(id="x-0", text="Task: return an item | Actions: get_order()", source_task_text="return an item")]
    save_memory(out, rows, {"kind": kind})
    return str(out)


def _appworld_data() -> bool:
    root = Path(os.environ.get("APPWORLD_ROOT") or REPO / ".cache" / "appworld" / "root")
    return (root / "data" / "tasks").is_dir()


def _runnable() -> list[DocCommand]:
    return [c for c in COMMANDS if c.argv[0] == "harness.run" or c.argv[1:2] == ("sweep",)]


@pytest.mark.parametrize("cmd", _runnable(), ids=str)
def test_documented_command_passes_config_validation(cmd: DocCommand, artifact, monkeypatch, capsys, tmp_path):
    from harness.run import checked_command

    if any("first_k" in a for a in cmd.argv):  # strategies/README.md's plugin, installed as the guide says first
        monkeypatch.syspath_prepend(str(install_readme_plugin(tmp_path)))
        monkeypatch.delitem(sys.modules, "my_plugin", raising=False)

    for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):  # a key the user has; nothing is called
        monkeypatch.setenv(var, "test-key-not-used-0000")
    argv = list(cmd.argv[1:]) if cmd.argv[0] == "harness.run" else doc_commands.harness_run_argv(cmd, REPO)
    filled = _filled(argv, str(artifact))
    if filled is None:
        pytest.skip(f"a placeholder only the user can fill: {' '.join(argv)}")
    if "benchmark=appworld" in filled and not _appworld_data():  # validation would try to download it
        pytest.skip("AppWorld's data is not here: `make appworld-data` needs internet")
    expected_error = DOCUMENTED_TO_FAIL.get(f"{cmd.where.split(':')[0]}: {' '.join(cmd.argv)}")
    try:
        checked_command(filled)
    except SystemExit as exc:
        err = capsys.readouterr().err
        if expected_error:
            assert exc.code == 2 and expected_error in err, err
            return
        for message, marker in _NOT_SET_UP.items():
            if message in err and not marker.exists():
                pytest.skip(f"not set up here ({marker.relative_to(REPO)}); `make setup` installs it")
        pytest.fail(f"{cmd}\n  -> harness.run {' '.join(filled)}\n  exit {exc.code}: {err.strip()[-1500:]}")
    assert not expected_error, f"{cmd}: the docs say it fails ({expected_error}), it passed validation"


PYTHON_COMMANDS = doc_commands.python_commands()
VENV_PYTHON = (".venv/bin/python", ".venv-appworld/bin/python")
PROJECT_FOLDERS = ("analysis/", "bench/", "harness/", "scripts/", "strategies/", "tests/")


def test_the_docs_show_python_commands():  # multi-line inline spans included: a broken parser must not pass all
    assert len(PYTHON_COMMANDS) > 40
    assert any(c.argv[1:3] == ("-m", "harness.plan_facts") for c in PYTHON_COMMANDS)  # a span over two lines
    assert any(c.argv[1].startswith("bench/") for c in PYTHON_COMMANDS)


@pytest.mark.parametrize("cmd", PYTHON_COMMANDS, ids=str)
def test_python_commands_name_the_project_interpreter_and_what_exists(cmd: DocCommand):
    interpreter, target = cmd.argv[0], cmd.argv[1]
    assert interpreter in VENV_PYTHON, f"{cmd}: write `.venv/bin/python ...` (a bare {interpreter} lacks hydra)"
    if target == "-m":
        assert importlib.util.find_spec(cmd.argv[2]) is not None, f"{cmd}: no module {cmd.argv[2]}"
    elif target.startswith(PROJECT_FOLDERS):  # `my_sweep.py`: the reader's own script
        assert (REPO / target).is_file(), f"{cmd}: no file {target}"


def _flags_by_program() -> dict[tuple[str, ...], set[str]]:
    """Per documented program (`-m module` or a script) other than harness.run (validated above): the --flags the
    docs give it."""
    found: dict[tuple[str, ...], set[str]] = {}
    for cmd in PYTHON_COMMANDS:
        program = ("-m", cmd.argv[2]) if cmd.argv[1] == "-m" else (cmd.argv[1],)
        if program[-1] != "harness.run" and program[-1].startswith(("bench/", "analysis.", "harness.", "tau2.")):
            flags = {w.split("=")[0] for w in cmd.argv if w.startswith("--") and w != "--"}
            found.setdefault(program, set()).update(flags)
    return {program: flags for program, flags in found.items() if flags}  # a bare one: find_spec / is_file above


def _help(program: tuple[str, ...]) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of `python <program> --help`, run as `python` runs it (runpy, as __main__) in
    this process when the program is the project's: a new interpreter per program would import the same
    libraries again for seconds each."""
    import contextlib
    import io
    import runpy
    import subprocess
    import sys
    import warnings

    if program[-1].split(".")[0] not in ("analysis", "harness", "bench"):  # another package's module
        shown = subprocess.run([sys.executable, *program, "--help"], cwd=REPO, capture_output=True, text=True,
                               timeout=300)
        return shown.returncode, shown.stdout, shown.stderr
    out, err, argv, here = io.StringIO(), io.StringIO(), sys.argv, os.getcwd()
    code: object = 0
    os.chdir(REPO)
    try:
        sys.argv = [program[-1], "--help"]
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), warnings.catch_warnings():
            warnings.filterwarnings("ignore", r".*found in sys.modules", RuntimeWarning)  # imported by a test before
            if program[0] == "-m":
                runpy.run_module(program[1], run_name="__main__", alter_sys=True)
            else:
                runpy.run_path(str(REPO / program[0]), run_name="__main__")
    except SystemExit as exc:  # argparse's --help exits 0
        code = exc.code
    finally:
        sys.argv = argv
        os.chdir(here)
    return (code if isinstance(code, int) else int(code is not None)), out.getvalue(), err.getvalue()


@pytest.mark.parametrize("program, flags", sorted(_flags_by_program().items()), ids=lambda v: " ".join(v)
                         if isinstance(v, tuple) else "")
def test_documented_programs_start_and_know_their_documented_flags(program, flags):
    code, stdout, stderr = _help(program)
    assert code == 0, stderr[-2000:]
    missing = sorted(f for f in flags if f not in stdout)
    assert not missing, f"{' '.join(program)}: the docs use {missing}, its --help has no such flag"
