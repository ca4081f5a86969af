"""Below the entry, a job is typed settings, never a config node: no module under the runner, the benchmarks, the
assembly, serving, the store or strategies imports omegaconf, names `DictConfig` or reads an attribute `.cfg`
(harness/settings.py). The settings mirror the Hydra schema field for field, and a secret stays a reference."""

from __future__ import annotations

import ast
import pickle
from dataclasses import fields
from pathlib import Path

import pytest

from harness.config import SCHEMAS

REPO = Path(__file__).resolve().parent.parent
BELOW_THE_ENTRY = ("harness/runner", "harness/benchmarks", "harness/assembly", "harness/serving", "harness/store",
                   "strategies", "memory_kit")


def config_reads(source: str, filename: str = "<source>") -> list[str]:
    """Each omegaconf import, use of the name DictConfig, and `.cfg` read in `source`, as `line: what`."""
    found = []
    for node in ast.walk(ast.parse(source, filename)):
        if isinstance(node, ast.Import):
            found += [f"{node.lineno}: import {a.name}" for a in node.names if a.name.split(".")[0] == "omegaconf"]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "omegaconf":
            found.append(f"{node.lineno}: from {node.module} import ...")
        elif isinstance(node, ast.Name) and node.id == "DictConfig":
            found.append(f"{node.lineno}: DictConfig")
        elif isinstance(node, ast.Attribute) and (node.attr == "cfg" or node.attr == "DictConfig"):
            found.append(f"{node.lineno}: .{node.attr}")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("DictConfig"):
            found.append(f"{node.lineno}: a DictConfig annotation")  # `x: "DictConfig"` under __future__ annotations
    return found


def test_nothing_below_the_entry_reads_a_config_node():
    offenders = []
    for folder in BELOW_THE_ENTRY:
        for path in sorted((REPO / folder).rglob("*.py")):
            rel = path.relative_to(REPO)
            offenders += [f"{rel}:{hit}" for hit in config_reads(path.read_text(encoding="utf-8"), str(rel))]
    assert not offenders, "config read below the entry (use the job's settings):\n" + "\n".join(offenders)


@pytest.mark.parametrize("source", ["from omegaconf import OmegaConf", "import omegaconf.errors",
                                    "def f(c: DictConfig): ...", "x = job.cfg.model", "y = self.cfg"])
def test_the_walk_finds_each_kind_of_config_read(source):
    assert config_reads("from __future__ import annotations\n" + source)


def test_a_plain_attribute_named_like_a_config_is_not_a_read():
    assert config_reads("x = job.settings.model\ncfg = 1\nconfig = cfg") == []


@pytest.mark.parametrize("settings, schema", list(SCHEMAS.items()))
def test_settings_have_exactly_the_schemas_fields(settings, schema):
    assert [f.name for f in fields(settings)] == [f.name for f in fields(schema)]


def test_a_secret_travels_as_its_reference_and_is_read_where_used(monkeypatch):
    from conftest import compose
    from harness.serving.models import ModelSpec
    from harness.settings import EnvRef

    monkeypatch.setenv("MEMDELIV_SECRET_9_KEY", "sk-typedmiddle123456")
    s = compose("model=oracle", "+model.kwargs.api_key=${oc.env:MEMDELIV_SECRET_9_KEY}",
                "+strategy.options.token=${oc.env:MEMDELIV_SECRET_9_KEY}")
    assert s.model.kwargs["api_key"] == EnvRef("MEMDELIV_SECRET_9_KEY")
    assert b"sk-typedmiddle" not in pickle.dumps(s)  # what a Ray worker receives holds no secret
    monkeypatch.setenv("MEMDELIV_SECRET_9_KEY", "sk-workerside98765432")  # the worker's own environment
    agent, _ = ModelSpec(pickle.loads(pickle.dumps(s)).model).clients()
    assert agent.kwargs["api_key"] == "sk-workerside98765432"
    assert s.strategy_options()["token"] == "sk-workerside98765432"


def test_settings_are_frozen_and_equal_settings_are_one_key():
    from conftest import compose

    a, b = compose("model=oracle", "benchmark.limit=2"), compose("model=oracle", "benchmark.limit=2")
    assert a == b and hash(a) == hash(b) and a != compose("model=oracle", "benchmark.limit=3")
    with pytest.raises(AttributeError):
        a.benchmark.limit = 5  # type: ignore[misc]
    with pytest.raises(TypeError):
        a.model.kwargs["temperature"] = 1.0  # type: ignore[index]
