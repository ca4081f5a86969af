"""What the docs tell a user to type must work (README.md, docs/*.md, strategies/README.md; tests/doc_commands.py).

- every `make` command names a target the Makefile has, and sets only variables the Makefile uses;
- every `make sweep` command (its exact harness.run line, from `make -n`) and every `python -m harness.run` line
  passes the harness's own config composition and validation (harness.run.checked_command): nothing is run.
A placeholder the user fills in (`<run>`, `path/to/...`) is replaced by a real file of the same kind; a file an
earlier documented step writes under runs/ (`make simulated-memory`, `make memory`) by one made here.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import doc_commands
import pytest
from conftest import REPO, SAMPLE_MEMORY
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
    for arg in argv:
        if arg in ELIDED:
            continue
        key, sep, value = arg.partition("=")
        name = key.lstrip("+~")
        if sep and value == _SIMULATED_WORLD and not (REPO / value).is_file():
            value = world
        elif sep and name == "memory" and (_PLACEHOLDER.search(value) or (
                value.startswith("runs/memory/") and not (REPO / value).is_file())):
            value = str(SAMPLE_MEMORY)
        elif sep and name == "model.gguf" and _PLACEHOLDER.search(value):
            value = "bundled"
        elif sep and name == "benchmark.data_dir" and not (REPO / value).is_dir():  # `make tau2-data` (internet)
            value = str(DATA_DIR)
        elif _PLACEHOLDER.search(arg):
            return None
        out.append(f"{key}{sep}{value}")
    return out


def _appworld_data() -> bool:
    root = Path(os.environ.get("APPWORLD_ROOT") or REPO / ".cache" / "appworld" / "root")
    return (root / "data" / "tasks").is_dir()


def _runnable() -> list[DocCommand]:
    return [c for c in COMMANDS if c.argv[0] == "harness.run" or c.argv[1:2] == ("sweep",)]


@pytest.mark.parametrize("cmd", _runnable(), ids=str)
def test_documented_command_passes_config_validation(cmd: DocCommand, artifact, monkeypatch, capsys):
    from harness.run import checked_command

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
