"""The README's quick start, run as a newcomer types it: every `make` command of its "first sweep" section that
needs no API key and no local model server (the simulated world, the oracle, recommend).

The commands are read from README.md itself, so an edit there is what gets tested. Each RUN= name gets a
unique suffix so a run left in runs/ by hand is never resumed (which would skip every episode); the run
directories are removed afterwards. Beyond exit status, the test checks what the README promises the reader:
the planted effect shows (strong: full beats none; small: full loses to none) and recommend's decision matches the
planted truth (full, or "No decision yet"; never a strategy the world plants below the margin).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import uuid

import pytest

from conftest import REPO, read_records

pytestmark = pytest.mark.slow

SECTION = re.compile(r"^## A first sweep.*?(?=^## )", re.S | re.M)
BLOCK = re.compile(r"```bash\n(.*?)```", re.S)


def quickstart_commands() -> list[str]:
    """`make` lines of the first-sweep section, continuation lines joined, comments dropped."""
    section = SECTION.search((REPO / "README.md").read_text(encoding="utf-8")).group(0)
    lines = []
    for block in BLOCK.findall(section):
        joined = re.sub(r"\\\n\s*", " ", block)
        lines += [line.split("  #")[0].strip() for line in joined.splitlines() if line.strip().startswith("make ")]
    return lines


def needs_nothing_external(command: str) -> bool:
    model = re.search(r"\bMODEL=(\S+)", command)
    if command.split()[:2] == ["make", "sweep"] and model is None:
        return False  # the default model is the local llama.cpp server: minutes per episode, tested elsewhere
    return model is None or model.group(1) in ("simulated", "oracle")


def test_the_quickstart_section_is_what_this_test_runs():
    commands = quickstart_commands()
    runnable = [c for c in commands if needs_nothing_external(c)]
    assert any("MODEL=simulated" in c for c in runnable) and any("MODEL=oracle" in c for c in runnable)
    assert any(c.startswith("make recommend") for c in runnable)
    assert any(not needs_nothing_external(c) for c in commands)  # the key-needing example is still shown


def test_readme_quickstart_runs_offline_and_shows_the_planted_effect():
    suffix = uuid.uuid4().hex[:8]
    renamed = {}

    def unique(command: str) -> str:
        def sub(m: re.Match) -> str:
            name = renamed.setdefault(m.group(2), f"{m.group(2)}-{suffix}")
            return f"{m.group(1)}{name}"
        return re.sub(r"\b(RUNS?=runs/|RUN=)([\w.-]+)", sub, command)

    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    outputs = {}
    try:
        for command in (unique(c) for c in quickstart_commands() if needs_nothing_external(c)):
            done = subprocess.run(command, shell=True, cwd=REPO, env=env, capture_output=True, text=True,
                                  timeout=1200)
            assert done.returncode == 0, f"{command}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
            outputs[command] = done.stdout
        rates = {}
        for original, name in renamed.items():
            run_dir = REPO / "runs" / name
            if not (run_dir / "results.jsonl").exists():
                continue
            records = read_records(run_dir)
            for strategy in {r["strategy"] for r in records}:
                mine = [r for r in records if r["strategy"] == strategy and r.get("error") != "infra"]
                rates[original, strategy] = sum(r["success"] for r in mine) / len(mine)
        assert rates["sim-strong", "full"] > rates["sim-strong", "none"]
        assert rates["sim-small", "full"] < rates["sim-small", "none"]
        assert rates["oracle-demo", "none"] == 1.0
        advice = next(out for cmd, out in outputs.items() if cmd.startswith("make recommend"))
        # the planted truth at margin 5: full is 14 points above core_retrieval and 31 above none
        assert "SIMULATED" in advice and ("Recommended: full" in advice or "No decision yet" in advice), advice
        assert not re.search(r"Recommended: (none|core_retrieval)\b", advice)
    finally:
        for name in renamed.values():
            shutil.rmtree(REPO / "runs" / name, ignore_errors=True)
