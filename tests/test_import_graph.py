"""The import graph of foundation/, memory_kit/, harness/, strategies/, analysis/ and bench/ (stdlib `ast`; imports
inside functions count too): no circles, no upward arrows between the layers below, analysis reads run files and
imports no harness code beyond shared plain definitions, bench and analysis import no test code nor scripted
models' internals, strategies import no benchmark adapter, and no non-test file is over MAX_LINES lines."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("foundation", "memory_kit", "harness", "strategies", "analysis", "bench")

MAX_LINES = 350  # a non-test .py file longer than this is split by concern

# The layers, lowest first (docs/architecture.md): a module may import its own layer or a lower one, never a
# higher one (an upward arrow). The table names folders and harness's top-level modules, never a module inside a
# folder, so every folder is one layer (test_every_folder_is_one_layer). A module belongs to the layer of its
# longest matching prefix; a module in no layer fails the test, so a new module is placed on purpose. analysis is
# outside the stack: it reads run files (see SHARED_DEFINITIONS).
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("foundation", ("foundation", "strategies", "memory_kit", "harness", "harness.secrets", "harness.config_errors",
                    "harness.row", "harness.usage", "harness.settings", "harness.infra_rates")),
    ("model calls", ("harness.serving",)),
    ("core", ("harness.config", "harness.errors", "harness.ledger", "harness.records", "harness.provenance",
              "harness.assembly", "harness.store")),
    ("benchmarks", ("harness.benchmarks", "harness.scripted")),
    ("runner", ("harness.runner",)),
    ("entry points", ("harness.run", "harness.checks", "harness.selfcheck", "harness.memory", "harness.import_tau2",
                      "harness.plan_facts", "harness.waves", "bench")),
)


def module_names(root: Path, packages: tuple[str, ...]) -> dict[str, Path]:
    names = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            names[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return names


def imports_of(name: str, path: Path, known: set[str], test_modules: set[str]) -> set[str]:
    """The project modules `name` imports anywhere in its file. A bare top-level name that is a tests/ module
    (`from conftest import ...` after putting tests/ on sys.path) counts as that test module."""
    parts = name.split(".")
    if path.name == "__init__.py":
        parts.append("__init__")  # a relative import counts from the package itself
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = ".".join([*parts[: len(parts) - node.level], *([node.module] if node.module else [])]) \
                if node.level else node.module or ""
            # `from pkg import sub` imports the submodule; `from pkg import func`, the package
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
        else:
            continue
        for target in targets:
            if target in test_modules:
                found.add(f"tests.{target}")
                continue
            while target and target not in known:  # `import a.b.c` where only a.b is ours, or a third party
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def import_graph(root: Path = REPO, packages: tuple[str, ...] = PACKAGES) -> dict[str, set[str]]:
    modules = module_names(root, packages)
    tests = {p.stem for p in (root / "tests").glob("*.py")} if (root / "tests").is_dir() else set()
    return {name: imports_of(name, path, set(modules), tests) for name, path in modules.items()}


def circles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """Strongly connected components with more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in graph:
                    continue
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(frozenset(component))
    return found


def arrows(graph: dict[str, set[str]], source: str, target: str) -> list[str]:
    """`a -> b` for every import from package `source` into package `target`."""
    def inside(module: str, package: str) -> bool:
        return module == package or module.startswith(package + ".")

    return sorted(f"{a} -> {b}" for a, targets in graph.items() if inside(a, source)
                  for b in targets if inside(b, target))


def test_the_graph_sees_function_level_imports_and_circles(tmp_path):
    """The checker itself: a circle closed by an import inside a function, and a bench import of tests/ code."""
    (tmp_path / "harness").mkdir()
    (tmp_path / "bench").mkdir()
    (tmp_path / "tests").mkdir()
    (tmp_path / "harness" / "__init__.py").write_text("")
    (tmp_path / "harness" / "a.py").write_text("from harness.b import run\n")
    (tmp_path / "harness" / "b.py").write_text("def run():\n    from harness import a\n")
    (tmp_path / "harness" / "c.py").write_text("from . import b\n")
    (tmp_path / "bench" / "x.py").write_text("import sys\nfrom conftest import compose\n")
    (tmp_path / "tests" / "conftest.py").write_text("")
    graph = import_graph(tmp_path, ("harness", "bench"))
    assert graph["harness.a"] == {"harness.b"} and graph["harness.b"] == {"harness.a"}
    assert graph["harness.c"] == {"harness.b"}
    assert circles(graph) == [frozenset({"harness.a", "harness.b"})]
    assert arrows(graph, "bench", "tests") == ["bench.x -> tests.conftest"]


def layer_of(module: str, layers=LAYERS) -> int | None:
    """Index of the layer whose longest prefix matches `module` (None: in no layer)."""
    best = (-1, None)
    for index, (_, prefixes) in enumerate(layers):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best[0]:
                best = (len(prefix), index)
    return best[1]


def upward_arrows(graph: dict[str, set[str]], layers=LAYERS) -> list[str]:
    """`a -> b (low layer -> higher layer)` for every import from a lower layer into a higher one."""
    found = []
    for a, targets in sorted(graph.items()):
        low = layer_of(a, layers)
        for b in sorted(targets):
            high = layer_of(b, layers)
            if low is not None and high is not None and high > low:
                found.append(f"{a} -> {b} ({layers[low][0]} -> {layers[high][0]})")
    return found


def test_the_layer_check_finds_an_upward_arrow():
    layers = (("low", ("harness.config",)), ("high", ("harness.runner",)))
    graph = {"harness.config": {"harness.runner.job"}, "harness.runner.job": {"harness.config"}}
    assert layer_of("harness.runner.job", layers) == 1 and layer_of("analysis.runs.load", layers) is None
    assert upward_arrows(graph, layers) == ["harness.config -> harness.runner.job (low -> high)"]
    assert layer_of("harness.serving.models") < layer_of("harness.config")  # longest prefix wins


def test_no_import_circles():
    assert [sorted(c) for c in circles(import_graph())] == []


def test_every_module_has_a_layer_and_no_arrow_points_up():
    graph = import_graph()
    assert [m for m in graph if not m.startswith("analysis") and layer_of(m) is None] == []
    assert upward_arrows(graph) == []


def test_every_folder_is_one_layer():
    """The layer table places folders and harness's loose top-level modules, never a module inside a folder: so
    each folder (harness/serving/, harness/scripted/, harness/runner/, ...) is exactly one layer, and where a file
    lives says what it may import."""
    for _, prefixes in LAYERS:
        for prefix in prefixes:
            path = REPO / prefix.replace(".", "/")
            loose = prefix.count(".") == 1 and path.with_suffix(".py").is_file()  # e.g. harness/config.py
            assert path.is_dir() or loose, f"{prefix}: not a folder nor a top-level module of its package"
    graph = import_graph()
    for module in graph:
        folder = module.rsplit(".", 1)[0] if module.count(".") >= 2 or not module.startswith("harness.") else None
        if folder and folder in graph and not folder.startswith("analysis"):
            assert layer_of(module) == layer_of(folder), f"{module} is not in its folder's layer"


def test_serving_code_imports_no_scripted_model():
    """Scripted models are providers declared by entry point (harness/serving/providers.py): production
    serving code never names them."""
    assert arrows(import_graph(), "harness.serving", "harness.scripted") == []


def test_analysis_and_bench_import_no_scripted_model_internals():
    """Only the simulated world's arithmetic, a shared plain definition: analysis computes the known truth its
    decisions are calibrated against with the same functions the simulated agent applies."""
    graph = import_graph()
    internals = [a for a in arrows(graph, "analysis", "harness.scripted") if a.split(" -> ")[1] not in SHARED_DEFINITIONS]
    assert internals == [] and arrows(graph, "bench", "harness.scripted") == []


def test_foundation_imports_nothing_of_the_project():
    """foundation/ (the entry-point registry, the atomic write) sits below strategies and the harness."""
    graph = import_graph()
    assert {m: sorted(t) for m, t in graph.items() if m.startswith("foundation") and t} == {}


def test_no_source_file_is_over_max_lines():
    sizes = {str(path.relative_to(REPO)): len(path.read_text(encoding="utf-8").splitlines())
             for package in (*PACKAGES, "scripts") for path in (REPO / package).rglob("*.py")}
    assert {path: n for path, n in sizes.items() if n > MAX_LINES} == {}


# Plain definitions analysis shares with the harness (issue 18: one definition of the assembly settings). Each
# imports no harness module, nor do the packages around it, so analysis still never loads runner code.
SHARED_DEFINITIONS = {"harness.assembly.options", "harness.row", "harness.usage", "harness.infra_rates",
                      "harness.scripted.simulated_world"}


def test_analysis_imports_no_harness_code_but_shared_definitions():
    graph = import_graph()
    assert [a for a in arrows(graph, "analysis", "harness") if a.split(" -> ")[1] not in SHARED_DEFINITIONS] == []
    for module in SHARED_DEFINITIONS:
        parents = {module.rsplit(".", n)[0] for n in range(module.count(".") + 1)}  # its packages run first
        # a shared definition may import another (harness/row.py the roles of harness/usage.py), nothing else
        assert {m: sorted(graph[m]) for m in parents
                if any(t.startswith("harness") and t not in SHARED_DEFINITIONS for t in graph[m])} == {}


# analysis's parts (docs/architecture.md), each importing only the ones before it; the commands above them all
ANALYSIS_PARTS = ("analysis.statistics", "analysis.runs", "analysis.planning", "analysis.views")


def test_analysis_parts_import_only_the_parts_below_and_no_command():
    graph = import_graph()
    upward = [a for i, part in enumerate(ANALYSIS_PARTS) for later in ANALYSIS_PARTS[i + 1:]
              for a in arrows(graph, part, later)]
    shared = {"analysis", "analysis.fmt", *ANALYSIS_PARTS}  # the package, the formatting, the parts themselves
    commands = [f"{a} -> {b}" for part in ANALYSIS_PARTS for a, targets in graph.items() if a.startswith(part)
                for b in targets if b.startswith("analysis") and b not in shared and not b.startswith(ANALYSIS_PARTS)]
    assert upward == [] and commands == []


def test_bench_and_analysis_import_no_test_code():
    graph = import_graph()
    assert arrows(graph, "bench", "tests") == [] and arrows(graph, "analysis", "tests") == []


def test_strategies_import_no_benchmark_adapter():
    assert arrows(import_graph(), "strategies", "harness.benchmarks") == []


def package_exports(root: Path = REPO, packages: tuple[str, ...] = PACKAGES) -> dict[str, set[str]]:
    """The names each package's `__init__` imports from its own modules: its API (`from strategies import ...`)."""
    exports = {}
    for name, path in module_names(root, packages).items():
        if path.name == "__init__.py":
            own = {a.asname or a.name for node in ast.parse(path.read_text(encoding="utf-8")).body
                   if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(name + ".")
                   for a in node.names}
            if own:
                exports[name] = own
    return exports


def reached_from(graph: dict[str, set[str]], start: str) -> set[str]:
    """The modules `start` imports, directly or through others."""
    seen, todo = set(), [start]
    while todo:
        for nxt in graph.get(todo.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def second_paths(root: Path = REPO, packages: tuple[str, ...] = PACKAGES, skip: tuple[str, ...] = ()) -> list[str]:
    """`file:line name` wherever code outside a package imports a name of the package's API from the module
    behind it (a second path to one name), and every `noqa: F401` re-export. A module the package itself
    imports (the kit's model client, which the strategies registry hands out) imports from the defining module:
    through the package would close an import circle."""
    exports = {pkg: names for pkg, names in package_exports(root, packages).items() if pkg not in skip}
    graph = import_graph(root, packages)
    below = {pkg: reached_from(graph, pkg) for pkg in exports}
    found = []
    for name, path in module_names(root, (*packages, "tests")).items():
        text = path.read_text(encoding="utf-8")
        rel = path.relative_to(root)
        found += [f"{rel}:{n} re-export" for n, line in enumerate(text.splitlines(), 1)
                  if "noqa: F401" in line and "import" in line and not line.strip().startswith("import ")
                  and rel.parts[0] != "tests" and not name.startswith(skip)]
        for node in ast.walk(ast.parse(text, str(path))):
            if not isinstance(node, ast.ImportFrom) or node.level or not node.module:
                continue
            for pkg, names in exports.items():
                inside = name == pkg or name.startswith(pkg + ".")
                if node.module.startswith(pkg + ".") and not inside and name not in below[pkg]:
                    found += [f"{rel}:{node.lineno} {a.name}" for a in node.names if a.name in names]
    return found


def test_the_one_path_check_finds_a_second_path(tmp_path):
    (tmp_path / "harness" / "pkg").mkdir(parents=True)
    (tmp_path / "tests").mkdir()
    (tmp_path / "harness" / "__init__.py").write_text("")
    (tmp_path / "harness" / "pkg" / "__init__.py").write_text("from harness.pkg.mod import Thing\n")
    (tmp_path / "harness" / "pkg" / "mod.py").write_text("from harness.pkg.other import Other  # noqa: F401\n"
                                                         "class Thing: ...\n")
    (tmp_path / "harness" / "pkg" / "other.py").write_text("class Other: ...\n")
    (tmp_path / "harness" / "user.py").write_text("from harness.pkg.mod import Thing\nfrom harness.pkg import Thing\n")
    assert second_paths(tmp_path, ("harness",)) == ["harness/pkg/mod.py:1 re-export", "harness/user.py:1 Thing"]


def test_each_name_is_imported_by_one_path():
    """A package's API names are imported from the package outside it (its own modules import the definitions),
    and no module re-exports a name it imported."""
    assert second_paths() == []
