"""Memory artifacts on disk: JSON lines of guidelines, optionally led by one `_meta` line.

    {"_meta": {"kind": "sample", "note": "hand-written sample data, not learned"}}
    {"id": "g1", "text": "...", "category": "strategy", "support": 3, "source_task_ids": ["7", "12", "31"]}

An ACE playbook (`_meta.kind: ace_playbook`, see strategies/ace/playbook.py) is the same family:
`load_memory` returns its bullets as guidelines.

Errors name the file and line, so a bad artifact is fixed in one look.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any, Iterable

from memory_kit.artifact_rows import MemoryFileError, read_rows  # MemoryFileError: still importable from here
from foundation.atomic import write_text_atomic
from strategies.base import CATEGORIES, Guideline

_FIELDS = {f for f in Guideline.__dataclass_fields__}


def task_ids_sha256(task_ids: Iterable[Any]) -> str:
    return hashlib.sha256(json.dumps(sorted(str(t) for t in task_ids)).encode()).hexdigest()


def learned_from(benchmark: str, split: str, task_ids: Iterable[Any], model: str | None, ground_truth: bool,
                 task_set: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    """`_meta.learned_from` of an artifact: the tasks it learned from, and how (harness/provenance.py checks it
    against the tasks a sweep evaluates)."""
    ids = sorted({str(t) for t in task_ids}, key=lambda t: (not t.isdigit(), int(t) if t.isdigit() else 0, t))
    return {"benchmark": benchmark, "split": split, "task_ids": ids, "task_ids_sha256": task_ids_sha256(ids),
            "task_set": task_set, "model": model, "ground_truth": bool(ground_truth), **extra}


def load_memory(path: str | Path) -> tuple[list[Guideline], dict[str, Any]]:
    """Return (guidelines, meta). Raises MemoryFileError with file:line on any bad line."""
    path = Path(path)
    if not path.is_file():
        raise MemoryFileError(f"memory file not found: {path}")
    from strategies.ace.playbook import KIND, artifact_kind, load_playbook  # same family: an ACE playbook

    if artifact_kind(path) == KIND:  # its bullets read as guidelines, so any strategy can use one
        playbook, meta = load_playbook(path)
        return playbook.as_guidelines(), meta
    rows, meta = read_rows(path, _FIELDS)
    guidelines: list[Guideline] = []
    for where, row in rows:
        row["source_task_ids"] = tuple(str(t) for t in row.get("source_task_ids", ()))
        try:
            g = Guideline(**row)
        except (TypeError, ValueError) as exc:
            raise MemoryFileError(f"{where}: {exc}") from None
        if g.category not in CATEGORIES:
            raise MemoryFileError(f"{where}: category {g.category!r} not one of {CATEGORIES}")
        guidelines.append(g)
    return guidelines, meta


def save_memory(path: str | Path, guidelines: Iterable[Guideline], meta: dict[str, Any] | None = None) -> None:
    """Write atomically (temp file + rename) so a crash never leaves half an artifact."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps({"_meta": meta}) + "\n"] if meta else []
    for g in guidelines:
        row = asdict(g)
        row["source_task_ids"] = list(g.source_task_ids)
        lines.append(json.dumps(row, ensure_ascii=False) + "\n")
    write_text_atomic(path, "".join(lines))
