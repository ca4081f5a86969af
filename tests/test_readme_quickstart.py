"""The README's quick start as this suite reads it: the `make` commands of its "first sweep" section, the `make
table` command its "Reading the result" section quotes and the quoted rows and `make recommend` lines; and the
fresh copy of the checkout the documented commands run in (its files as `git ls-files` lists them, with .venv,
.venv-appworld and .cache linked to this checkout's), so that no test writes into this checkout's runs/ or resumes
a run left there (which would skip every episode).

tests/test_documented_outputs.py runs the quick start at its documented size in its session of every documented
command (one run of each, not two) and holds the quotes to what it prints: the simulated world is deterministic,
so every quoted table row and the quoted "Observed success" / "Recommended: ..." lines must be printed exactly,
and a change to the world or to the analysis fails there until the README follows.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import HUNG_S, REPO

SECTION = re.compile(r"^## A first sweep.*?(?=^## )", re.S | re.M)
RESULT_SECTION = re.compile(r"^## Reading the result.*?(?=^## )", re.S | re.M)
BLOCK = re.compile(r"```bash\n(.*?)```", re.S)
TABLE = re.compile(r"This is `(make table [^`]+)`.*?```\n(.*?)```", re.S)
ADVICE = re.compile(r"`(make recommend [^`]+)` turns this into a decision.*?```\n(.*?)```", re.S)
ROW = re.compile(r"^(\S+)\s+(\S+)\s+\d+×\d+\s.*?\s(\d+\.\d%) \[", re.M)  # model, strategy, success
# make would rebuild these in the copy, i.e. in the linked .venv / .venv-appworld / .cache (the browser part
# only installs a system package)
HARMLESS_PARTS = {".venv/.browser-done"}


def readme() -> str:
    return (REPO / "README.md").read_text(encoding="utf-8")


def quickstart_commands() -> list[str]:
    """`make` lines of the first-sweep section, continuation lines joined, comments dropped."""
    lines = []
    for block in BLOCK.findall(SECTION.search(readme()).group(0)):
        joined = re.sub(r"\\\n\s*", " ", block)
        lines += [line.split("  #")[0].strip() for line in joined.splitlines() if line.strip().startswith("make ")]
    return lines


def needs_nothing_external(command: str) -> bool:
    model = re.search(r"\bMODEL=(\S+)", command)
    if command.split()[:2] == ["make", "sweep"] and model is None:
        return False  # the default model is the local llama.cpp server: minutes per episode, tested elsewhere
    return model is None or model.group(1) in ("simulated", "oracle")


def quoted_table() -> tuple[str, list[str]]:
    """The `make table` command "Reading the result" names, and the table rows it quotes."""
    command, block = TABLE.search(RESULT_SECTION.search(readme()).group(0)).groups()
    return command, [line.rstrip() for line in block.splitlines() if ROW.match(line)]


def quoted_advice() -> tuple[str, list[str]]:
    """The `make recommend` command whose output "Reading the result" quotes, and the quoted lines."""
    command, block = ADVICE.search(RESULT_SECTION.search(readme()).group(0)).groups()
    return command, [line.rstrip() for line in block.splitlines() if line.strip()]


def success_of(rows: list[str]) -> dict[tuple[str, str], str]:
    return {(m, s): rate for m, s, rate in (ROW.match(row).groups() for row in rows)}


def test_the_quickstart_section_is_what_this_test_runs():
    commands = quickstart_commands()
    runnable = [c for c in commands if needs_nothing_external(c)]
    assert any("MODEL=simulated" in c for c in runnable) and any("MODEL=oracle" in c for c in runnable)
    assert any(c.startswith("make recommend") for c in runnable)
    assert any(not needs_nothing_external(c) for c in commands)  # the key-needing example is still shown
    table_command, rows = quoted_table()
    advice_command, advice = quoted_advice()
    # the quotes this test compares are there, and come from commands step 1 makes possible
    assert "runs/sim-strong" in table_command and advice_command in runnable
    assert len(rows) >= 4 and all(re.match(r"\d+\.\d%$", rate) for rate in success_of(rows).values())
    assert any(line.startswith("Observed success") for line in advice)
    assert sum(line.startswith("Recommended: ") for line in advice) == 1


def fresh_copy(root: Path) -> Path:
    """The checkout's files (tracked and new, not ignored) under root, modification times kept so make sees the
    same setup state as here; the environments and caches linked, not copied."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        if (REPO / name).is_file():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, root / name)
    for linked in (".venv", ".venv-appworld", ".cache"):
        if (REPO / linked).exists():
            (root / linked).symlink_to(REPO / linked)
    return root


def stale_setup_parts(root: Path) -> list[str]:
    """The parts of `make setup` (the Makefile's SETUP_PARTS) that make would rebuild in root (`make -q`)."""
    declared = re.search(r"^SETUP_PARTS\s*=\s*((?:.*\\\n)*.*)$", (root / "Makefile").read_text(), re.M).group(1)
    parts = [p for p in declared.replace("\\\n", " ").split() if p not in HARMLESS_PARTS]
    assert parts, "no SETUP_PARTS in the Makefile"
    return [p for p in parts if subprocess.run(["make", "-q", p], cwd=root, capture_output=True,
                                               timeout=HUNG_S).returncode != 0]
