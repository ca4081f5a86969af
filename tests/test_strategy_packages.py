"""Every built-in design is a package of one shape under strategies/, as every tau2-bench domain has the same files:
the parts below, each entry point naming a class the package defines, and no import of another design's package
(what two designs share lives in memory_kit/, or, for the two control arms, strategies/controls.py). strategies/'s
loose modules are the protocol and the registry; memory_kit/ holds no strategy (stdlib `ast`, tomllib)."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
import tomllib
from pathlib import Path

from conftest import HUNG_S
from strategies import StrategyBase
from test_import_graph import arrows, import_graph

REPO = Path(__file__).resolve().parent.parent
STRATEGIES = REPO / "strategies"

# The parts of a design package: required, then optional (a design may add modules of its own beside them:
# ACE's playbook, deltas, roles; awm's online variant; dynamic_cheatsheet's retrieval-synthesis variant)
PARTS = {
    "__init__.py": "a docstring naming the design and its parts; exports the class of an entry point that names "
                   "the package (`strategies.<design>:<Class>`), imported from its own module",
    "strategy.py": "the design's strategy class (a StrategyBase)",
}
OPTIONAL_PARTS = {"prompts.py": "its prompts and their parsing"}
# strategies/'s own modules: the protocol, the registry, and what the control arms share (their `match` option)
PROTOCOL = {"__init__.py", "base.py", "declaration.py", "registry.py", "compat.py", "options.py", "frame.py", "plan_block.py",
            "controls.py"}
DATA = {"samples"}  # sample memory artifacts the documented commands name, not a design
# The kit reads an ACE playbook as guidelines (one artifact family: any strategy can deliver one); nothing else in
# the kit knows a design. This list may only shrink.
KIT_KNOWS = {"memory_kit.memory_file -> strategies.ace.playbook"}


def entry_points() -> dict[str, str]:
    """name -> `module:Class` of the built-in strategies, as pyproject.toml declares them."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return dict(project["entry-points"]["memdeliv.strategies"])


def designs() -> list[str]:
    return sorted(p.name for p in STRATEGIES.iterdir() if p.is_dir() and p.name not in DATA | {"__pycache__"})


def classes_defined(path: Path) -> set[str]:
    return {n.name for n in ast.parse(path.read_text(encoding="utf-8")).body if isinstance(n, ast.ClassDef)}


def test_strategies_holds_the_protocol_and_one_package_per_design():
    loose = {p.name for p in STRATEGIES.iterdir() if p.is_file() and p.suffix == ".py"}
    assert loose == PROTOCOL
    packages = {target.split(":")[0].split(".")[1] for target in entry_points().values()}
    assert set(designs()) == packages  # every folder is a built-in design's package, every design has one


def test_every_design_package_has_the_parts():
    for design in designs():
        folder = STRATEGIES / design
        assert [part for part in PARTS if not (folder / part).is_file()] == [], design
        init = ast.parse((folder / "__init__.py").read_text(encoding="utf-8"))
        assert ast.get_docstring(init), f"{design}/__init__.py: a docstring naming the design and its parts"
        # __init__ exports only, from the package's own modules (no helper code, no second path into the kit)
        imports = [n for n in init.body if isinstance(n, ast.ImportFrom)]
        assert all((n.module or "").startswith(f"strategies.{design}.") for n in imports), design
        module = importlib.import_module(f"strategies.{design}.strategy")
        defined = [c for c in vars(module).values() if isinstance(c, type) and c.__module__ == module.__name__]
        assert any(issubclass(c, StrategyBase) for c in defined), f"{design}/strategy.py defines no strategy class"


def test_each_entry_point_names_a_class_its_package_defines():
    for name, target in entry_points().items():
        module, cls = target.split(":")
        design = module.split(".")[1]
        path = REPO / (module.replace(".", "/") + ("/__init__.py" if module.count(".") == 1 else ".py"))
        if module.count(".") == 1:  # the package: its __init__ exports the class from one of its own modules
            exported = {a.name: n.module for n in ast.parse(path.read_text(encoding="utf-8")).body
                        if isinstance(n, ast.ImportFrom) for a in n.names}
            assert cls in exported, f"{name}: strategies/{design}/__init__.py does not export {cls}"
            path = REPO / (exported[cls].replace(".", "/") + ".py")
        assert cls in classes_defined(path), f"{name}: {target} is not a class of strategies/{design}/"


def test_no_design_imports_another_designs_package():
    graph = import_graph()
    crossing = [a for design in designs() for other in designs() if other != design
                for a in arrows(graph, f"strategies.{design}", f"strategies.{other}")]
    assert crossing == []


def test_the_kit_holds_no_strategy_and_knows_no_design_but_the_listed():
    graph = import_graph()
    known = {a for design in designs() for a in arrows(graph, "memory_kit", f"strategies.{design}")}
    assert known == KIT_KNOWS  # a new one fails; a gone one is struck from the list
    for path in sorted((REPO / "memory_kit").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        bases = [ast.unparse(b) for n in ast.walk(tree) if isinstance(n, ast.ClassDef) for b in n.bases]
        assert "StrategyBase" not in bases, f"{path.relative_to(REPO)} defines a strategy: it belongs in strategies/"


def test_every_kit_module_and_design_package_imports_first():
    """Each imported first, in a fresh interpreter: the kit builds on the protocol, whose package imports no kit
    module at load time (the registry imports the kit's client inside the function that builds one), so no import
    order meets a half-loaded module."""
    modules = [f"memory_kit.{p.stem}" for p in sorted((REPO / "memory_kit").glob("*.py")) if p.stem != "__init__"]
    modules += [f"strategies.{design}" for design in designs()]
    program = ("import importlib, sys\n"
               f"for name in {modules!r}:\n"
               "    for loaded in [m for m in sys.modules if m.split('.')[0] in ('strategies', 'memory_kit')]:\n"
               "        del sys.modules[loaded]\n"
               "    importlib.import_module(name)\n")
    done = subprocess.run([sys.executable, "-c", program], cwd=REPO, capture_output=True, text=True, timeout=HUNG_S)
    assert done.returncode == 0, done.stderr[-2000:]
