"""The store (harness/store/) is the only code that opens a run's row files for writing: results.jsonl and
retries.jsonl are appended there, under the run's lock and fsynced (issue 34). Read from the source with ast."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("foundation", "memory_kit", "harness", "strategies", "analysis", "bench", "scripts")
ROW_FILES = re.compile(r"results\.jsonl|retries\.jsonl|\bRESULTS\b|\bRETRIES\b|results_path|retries_path")
WRITE_MODE = re.compile(r"""["'][rwxab+t]*[wxa+][rwxab+t]*["']|O_WRONLY|O_RDWR|O_APPEND|O_CREAT""")
WRITERS = {"write_text", "write_bytes", "write_text_atomic", "write_bytes_atomic", "truncate"}


def row_file_writes(source: str) -> list[int]:
    """Lines where a call opens or writes a row file: open()/Path.open()/os.open() with a write mode, or a
    write helper, whose call text names results.jsonl or retries.jsonl (or the constants naming them)."""
    hits = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        target = ast.unparse(func.value) if isinstance(func, ast.Attribute) else ""
        args = " ".join(ast.unparse(a) for a in [*node.args, *node.keywords])
        named = ROW_FILES.search(f"{target} {args}")
        if name == "open" and named and WRITE_MODE.search(args):
            hits.append(node.lineno)
        elif name in WRITERS and named:
            hits.append(node.lineno)
    return hits


def test_the_checker_finds_each_way_of_writing_a_row_file():
    planted = '\n'.join([
        'open(run / "results.jsonl", "a")',
        '(Path(store.root) / RETRIES).open("a", encoding="utf-8")',
        'os.open(store.results_path, os.O_WRONLY | os.O_APPEND)',
        '(root / RESULTS).write_text("")',
        'open(run / "results.jsonl")',  # a read: allowed
        '(root / "manifest.json").write_text("{}")',  # not a row file
    ])
    assert row_file_writes(planted) == [1, 2, 3, 4]


def test_only_harness_store_opens_results_or_retries_for_writing():
    store = ROOT / "harness" / "store"
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if store in path.parents:
                continue
            found += [f"{path.relative_to(ROOT)}:{line}" for line in row_file_writes(path.read_text(encoding="utf-8"))]
    assert found == []
    store_source = "\n".join(p.read_text(encoding="utf-8") for p in store.rglob("*.py"))
    assert row_file_writes(store_source), "the store's own appends are what the checker must see"
