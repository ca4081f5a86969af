"""The rows of a memory artifact (JSON lines, optionally `_meta` lines), read and checked: shared by every
artifact kind of the family (memory_kit/memory_file.py, strategies/ace/playbook.py), below both."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


class MemoryFileError(ValueError):
    pass


def read_rows(path: Path, fields: set[str],
              what: str = "guideline") -> tuple[list[tuple[str, dict[str, Any]]], dict[str, Any]]:
    """([(file:line, row), ...], merged `_meta`) of a JSONL artifact, every line checked for JSON, object
    shape, known fields and a unique id. Shared by every artifact kind of the family."""
    rows: list[tuple[str, dict[str, Any]]] = []
    meta: dict[str, Any] = {}
    seen: set[Any] = set()  # ids as the file has them (checked by the caller)
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{lineno}"
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise MemoryFileError(f"{where}: not JSON ({exc.msg})") from None
        if not isinstance(row, dict):
            raise MemoryFileError(f"{where}: expected a JSON object")
        if "_meta" in row:
            meta.update(row["_meta"])
            continue
        unknown = set(row) - fields
        if unknown:
            raise MemoryFileError(f"{where}: unknown field(s) {sorted(unknown)}; allowed {sorted(fields)}")
        if row.get("id") in seen:
            raise MemoryFileError(f"{where}: duplicate {what} id {row['id']!r}")
        seen.add(row.get("id"))
        rows.append((where, row))
    return rows, meta
