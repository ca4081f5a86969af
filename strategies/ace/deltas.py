"""Curator delta operations, validated and merged deterministically.

The Curator never rewrites the playbook; it proposes operations:

    {"type": "ADD",    "section": "common_mistakes_to_avoid", "content": "..."}
    {"type": "UPDATE", "id": "err-00004", "content": "..."}   # new text; id, section, counters kept
    {"type": "REMOVE", "id": "misc-00002"}

Operations are checked one by one, in the order given, against the playbook as the earlier valid
ones left it. An invalid one is rejected with its reason and the rest still apply. An ADD naming an
unknown section is filed under `others`, the reference's catch-all, and the move is recorded. In ACE's paper mode
only ADD is allowed (the reference code implements nothing else): UPDATE / REMOVE are then rejected
("not allowed in this mode") and recorded, never applied. All of it happens on a copy (Playbook edits
return new objects), so the caller's playbook is never half-changed.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from strategies.ace.playbook import SECTION_SETS, Playbook, one_line, section_name

OPERATIONS = ("ADD", "UPDATE", "REMOVE")
MAX_CONTENT_CHARS = 600  # extended mode's cap per bullet; paper mode has none (the reference has none)
CATCH_ALL = "others"  # where the reference files an ADD whose section it does not know


@dataclass(frozen=True)
class Rejected:
    operation: Any
    reason: str


@dataclass
class MergeResult:
    playbook: Playbook
    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    rejected: list[Rejected] = field(default_factory=list)
    refiled: list[dict[str, Any]] = field(default_factory=list)  # ADDs with an unknown section, put in `others`

    def summary(self) -> dict[str, Any]:
        return {"added": self.added, "updated": self.updated, "removed": self.removed,
                "rejected": [{"operation": r.operation, "reason": r.reason} for r in self.rejected],
                **({"refiled": self.refiled} if self.refiled else {})}


def _key(text: str) -> str:
    return one_line(text).casefold()


def _content(op: dict[str, Any], max_chars: int | None) -> str:
    raw = op.get("content")
    if not isinstance(raw, str) or not raw.strip():
        raise ValueError("content must be a non-empty string")
    text = one_line(raw)
    if max_chars is not None and len(text) > max_chars:
        raise ValueError(f"content is {len(text)} characters; the limit is {max_chars}")
    return text


def _existing(pb: Playbook, op: dict[str, Any]) -> str:
    bullet_id = op.get("id")
    if not isinstance(bullet_id, str) or bullet_id not in pb:
        raise ValueError(f"no bullet with id {bullet_id!r}")
    return bullet_id


def _apply_one(pb: Playbook, op: Any, max_chars: int | None, allowed: tuple[str, ...] = OPERATIONS,
               sections: str = "generic") -> tuple[Playbook, str, str]:
    """-> (new playbook, kind, bullet id). Raises ValueError with the reason when invalid."""
    if not isinstance(op, dict):
        raise ValueError("an operation must be a JSON object")
    kind = str(op.get("type", "")).strip().upper()
    if kind not in OPERATIONS:
        raise ValueError(f"unknown operation type {op.get('type')!r}; valid: {', '.join(OPERATIONS)}")
    if kind not in allowed:
        raise ValueError(f"{kind} is not allowed in this mode (allowed: {', '.join(allowed)}); "
                         "ACE's paper mode is ADD-only, as its reference code")
    if kind == "REMOVE":
        bullet_id = _existing(pb, op)
        return pb.remove(bullet_id), kind, bullet_id
    text = _content(op, max_chars)
    twins = [b.id for b in pb.bullets if _key(b.content) == _key(text)]
    if kind == "ADD":
        section = section_name(op.get("section", ""), SECTION_SETS[sections]) or CATCH_ALL
        if twins:
            raise ValueError(f"same text as existing bullet {twins[0]}")
        pb, bullet = pb.add(section, text)
        return pb, kind, bullet.id
    bullet_id = _existing(pb, op)
    if twins:
        raise ValueError(f"same text as existing bullet {twins[0]}")
    return pb.put(replace(pb.bullet(bullet_id), content=text)), kind, bullet_id


def apply_operations(playbook: Playbook, operations: list[Any], max_content_chars: int | None = MAX_CONTENT_CHARS,
                     max_operations: int | None = None, allowed: tuple[str, ...] = OPERATIONS,
                     sections: str = "generic") -> MergeResult:
    result = MergeResult(playbook=playbook)
    for index, op in enumerate(operations):
        if max_operations is not None and index >= max_operations:
            result.rejected.append(Rejected(op, f"over the limit of {max_operations} operations per update"))
            continue
        try:
            result.playbook, kind, bullet_id = _apply_one(result.playbook, op, max_content_chars, allowed, sections)
        except ValueError as exc:
            result.rejected.append(Rejected(op, str(exc)))
            continue
        {"ADD": result.added, "UPDATE": result.updated, "REMOVE": result.removed}[kind].append(bullet_id)
        if kind == "ADD" and result.playbook.bullet(bullet_id).section == CATCH_ALL and \
                section_name(op.get("section", ""), SECTION_SETS[sections]) is None:
            result.refiled.append({"id": bullet_id, "section": op.get("section")})
    return result
