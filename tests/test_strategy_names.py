"""Outside strategies/, code asks a strategy what it declares instead of comparing its name with a literal, and no
code probes a strategy (or what the registry returns) for a member with getattr/hasattr (stdlib `ast`).

`DEBT` lists the comparisons that remain, module by module, each with the names it compares: the list may only
shrink (a new comparison fails here; removing one fails until it is struck from the list too)."""

from __future__ import annotations

import ast
from pathlib import Path

import strategies

REPO = Path(__file__).resolve().parent.parent
OUTSIDE = ("memory_kit", "harness", "analysis", "bench")
# module -> the strategy names it still compares with (the baseline `none` is analysis's reference arm)
DEBT = {
    "analysis/runs/deliveries.py": {"core_retrieval"},
    "analysis/views/controls.py": {"full"},
    "harness/memory/build.py": {"none"},  # not a strategy: consolidation mode "none" (a false alarm, kept)
    "harness/memory/ace_adapt.py": {"none"},  # not a strategy: its --dedup value "none" (a false alarm, kept)
    "memory_kit/consolidation_altk.py": {"none"},  # not a strategy: its consolidation mode "none" (a false alarm)
}


def _literals(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return []


def compared_names(path: Path, names: set[str]) -> set[str]:
    """Strategy names that `path` compares something with (==, !=, in) or loops over as literals."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Compare):
            for side in (node.left, *node.comparators):
                found |= set(_literals(side)) & names
        elif isinstance(node, ast.For):
            found |= set(_literals(node.iter)) & names
    return found


def test_no_module_outside_strategies_decides_by_a_strategys_name():
    names = set(strategies.available())
    seen = {}
    for package in OUTSIDE:
        for path in sorted((REPO / package).rglob("*.py")):
            compared = compared_names(path, names)
            if compared:
                seen[str(path.relative_to(REPO))] = compared
    assert "analysis/planning/plan_estimate.py" not in seen  # `make plan` reads each design's declaration
    assert seen == DEBT


def test_nothing_probes_a_strategy_for_a_member():
    probes = []
    for package in (*OUTSIDE, "strategies"):
        for path in sorted((REPO / package).rglob("*.py")):
            if path.name == "compat.py":  # the fitting of old-protocol plugins reads what they declare, if anything
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                        node.func.id in ("getattr", "hasattr") and node.args:
                    target = ast.unparse(node.args[0])
                    if ("strateg" in target.lower() or target == "cls") and not (len(node.args) > 1 and ast.unparse(node.args[1]) == "phase"):
                        probes.append(f"{path.relative_to(REPO)}:{node.lineno}: {ast.unparse(node)}")
    assert probes == []
