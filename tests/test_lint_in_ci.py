"""ruff and mypy run inside `make test` (so in CI, whose .ci/run is `make setup && make test`), from the hash-checked
lock, over foundation/, memory_kit/, harness/, strategies/, analysis/ and bench/, and catch what they are configured to catch."""

from __future__ import annotations

import importlib.metadata
import re
import subprocess
import sys
import tomllib
from pathlib import Path

from conftest import HUNG_S

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ["foundation", "memory_kit", "harness", "strategies", "analysis", "bench"]
CONFIG = tomllib.loads((ROOT / "pyproject.toml").read_text())
TYPE_IGNORE = re.compile(r"#\s*type:\s*ignore(?P<codes>\[[^\]]*\])?(?P<after>.*)$")


def test_make_test_runs_ruff_then_mypy_before_pytest():
    assert re.search(r"^make test$", (ROOT / ".ci" / "run").read_text(), re.M)
    shown = subprocess.run(["make", "-n", "--no-print-directory", "test"], cwd=ROOT, capture_output=True, text=True,
                           timeout=HUNG_S, check=True).stdout.splitlines()
    order = [next((i for i, line in enumerate(shown) if re.search(pattern, line)), None)
             for pattern in (r"\bruff check\b", r"-m mypy\b", r"-m pytest\b")]
    assert None not in order and order == sorted(order), shown[-6:]


def test_the_tools_come_from_the_lock_and_are_the_ones_installed():
    wanted = dict(re.findall(r"^(ruff|mypy)==(\S+)", (ROOT / "requirements.in").read_text(), re.M))
    assert set(wanted) == {"ruff", "mypy"}
    lock = (ROOT / "requirements.lock").read_text()
    for name, version in wanted.items():
        assert re.search(rf"^{name}=={re.escape(version)} \\\n    --hash=sha256:[0-9a-f]{{64}}", lock, re.M), name
        assert importlib.metadata.version(name) == version  # `make setup` installed what the lock pins


def test_the_checks_cover_the_six_folders_without_blanket_ignores():
    assert CONFIG["tool"]["mypy"]["files"] == FOLDERS
    assert [p.split("/")[0] for p in CONFIG["tool"]["ruff"]["include"]][:6] == FOLDERS
    for section in [CONFIG["tool"]["mypy"], *CONFIG["tool"]["mypy"]["overrides"]]:
        assert not section.get("ignore_errors") and not section.get("disable_error_code")
    assert "ignore_missing_imports" not in CONFIG["tool"]["mypy"]  # only per third-party module
    assert "per-file-ignores" not in CONFIG["tool"]["ruff"]["lint"]


def test_every_type_ignore_names_its_code_and_a_reason():
    bare = []
    for folder in FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                found = TYPE_IGNORE.search(line)
                if found and not (found["codes"] and re.match(r"\s*#\s*\S", found["after"])):
                    bare.append(f"{path.relative_to(ROOT)}:{n}")
    assert not bare, f"`# type: ignore[code]  # reason` wanted at {bare}"


def test_the_configured_checks_catch_planted_mistakes(tmp_path):
    planted = tmp_path / "planted.py"
    planted.write_text("import os\n\n\ndef add(item, into=[]):\n    into.append(item)\n    return into\n\n\n"
                       "count: int = 'three'\nsilenced = 1 + ''  # type: ignore\nwhole = 1  # noqa\n")
    ruff = subprocess.run([str(Path(sys.executable).parent / "ruff"), "check", "--no-cache", "--config",
                           str(ROOT / "pyproject.toml"), "--output-format", "concise", str(planted)],
                          capture_output=True, text=True, timeout=HUNG_S)
    assert ruff.returncode == 1
    assert {"F401", "B006", "PGH004"} <= set(re.findall(r": ([A-Z]+\d+) ", ruff.stdout)), ruff.stdout
    mypy = subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
                           "--cache-dir", str(tmp_path / "cache"), str(planted)],
                          capture_output=True, text=True, timeout=HUNG_S, cwd=tmp_path)
    assert mypy.returncode == 1
    assert {"assignment", "ignore-without-code"} <= set(re.findall(r"\[([a-z-]+)\]$", mypy.stdout, re.M)), mypy.stdout
