"""strategies/README.md's "Add a strategy", followed word for word: the guide's pyproject.toml and its example
module, installed as that pyproject declares them (the .dist-info pip writes: its name, version and entry point;
not into the shared venv), then the guide's keyless sweep run through the CLI with the plugin on the path."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import textwrap
import tomllib

import doc_commands
from conftest import HUNG_S, REPO, read_records

GUIDE = REPO / "strategies" / "README.md"


def _section() -> str:
    text = GUIDE.read_text()
    return text[text.index("## Add a strategy"):text.index("## Options")]


def _block(text: str, language: str) -> str:
    return textwrap.dedent(text.split(f"```{language}\n")[1].split("```")[0])


def test_the_guide_says_how_to_install_offline():
    section = " ".join(_section().split())
    pyproject = tomllib.loads(_block(_section(), "toml"))
    assert pyproject["build-system"]["build-backend"] == "setuptools.build_meta"
    # --no-build-isolation builds with the venv's setuptools: the lock pins it, so no download is needed
    assert re.search(r"^setuptools==", (REPO / "requirements.lock").read_text(), re.M)
    assert "`.venv/bin/pip install --no-build-isolation -e my-plugin`" in section
    assert "a folder `my-plugin/` holding `my_plugin.py`" in section and "`ctx.require_memory(name)`" in section
    assert "`render_guidelines(guidelines)`" in section
    assert len(_block(GUIDE.read_text(), "python").strip().splitlines()) <= 30  # the example stays short


def test_a_plugin_made_from_the_guide_runs_its_keyless_sweep(tmp_path, artifact):
    section = _section()
    pyproject = tomllib.loads(_block(section, "toml"))
    project, (module,) = pyproject["project"], pyproject["tool"]["setuptools"]["py-modules"]
    site = tmp_path / "site"
    site.mkdir()
    (site / f"{module}.py").write_text(_block(GUIDE.read_text(), "python"))  # the example, as my_plugin.py
    dist = site / f"{project['name'].replace('-', '_')}-{project['version']}.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n")
    (dist / "entry_points.txt").write_text("".join(
        f"[{group}]\n" + "".join(f"{name} = {target}\n" for name, target in points.items())
        for group, points in project["entry-points"].items()))

    documented = [c for c in doc_commands.commands() if c.where.startswith("strategies/README.md")
                  and c.argv[:2] == ("make", "sweep") and any("first_k" in a for a in c.argv)]
    assert len(documented) == 1, documented
    (sweep,) = documented
    assert "MODEL=simulated" in sweep.argv  # keyless
    limit = int(next(a for a in sweep.argv if a.startswith("LIMIT=")).split("=")[1])
    run = next(a for a in sweep.argv if a.startswith("RUN=")).split("=")[1]
    argv = doc_commands.harness_run_argv(sweep, REPO)
    # `make simulated-memory` (the step before it) wrote the world: here the test's own
    cmd = [sys.executable, "-m", "harness.run", *argv, f"runs_dir={tmp_path / 'runs'}", "progress=false",
           f"memory={artifact}", f"model.world={artifact}"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), *filter(None, [os.environ.get("PYTHONPATH")])])}
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=HUNG_S, env=env)
    assert proc.returncode == 0, shlex.join(cmd) + "\n" + proc.stderr[-3000:]
    records = read_records(tmp_path / "runs" / run)
    mine = [r for r in records if r["strategy"] == "first_k"]
    assert len(mine) == limit and sum(r["strategy"] == "none" for r in records) == limit
    assert {len(ids) for r in mine for ids in r["delivered"]} == {2}  # k's default: the first 2 guidelines
