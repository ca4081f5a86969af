"""The ACE playbook as data: bullets `[id] helpful=X harmful=Y :: text` in named sections.

On disk it belongs to the memory-artifact family (JSON lines, see memory_kit/memory_file.py):

    {"_meta": {"kind": "ace_playbook", "next_id": 4, ...}}
    {"id": "str-00001", "section": "strategies_and_insights", "content": "...", "helpful": 2, "harmful": 0,
     "created": 1}

Ids are the section's slug plus one counter shared by all sections, so an id is never reused, and the
number says how old a bullet is. A Playbook is changed only through methods that return a new one,
so a failed update can never leave a half-edited playbook behind.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Iterable

from foundation.atomic import write_text_atomic
from strategies.base import Guideline
from memory_kit.artifact_rows import MemoryFileError, read_rows

KIND = "ace_playbook"

# section name -> (id slug, heading). Order is the rendering order; `others` (shared) comes last.
# Two sets: the generic sections of ace-agent/ace, and the AppWorld sections of ace-appworld (same slugs).
_GENERIC = {
    "strategies_and_insights": ("str", "STRATEGIES & INSIGHTS"),
    "formulas_and_calculations": ("calc", "FORMULAS & CALCULATIONS"),
    "code_snippets_and_templates": ("code", "CODE SNIPPETS & TEMPLATES"),
    "common_mistakes_to_avoid": ("err", "COMMON MISTAKES TO AVOID"),
    "problem_solving_heuristics": ("prob", "PROBLEM-SOLVING HEURISTICS"),
    "context_clues_and_indicators": ("ctx", "CONTEXT CLUES & INDICATORS"),
}
_APPWORLD = {
    "strategies_and_hard_rules": ("shr", "STRATEGIES AND HARD RULES"),
    "apis_to_use_for_specific_information": ("api", "APIs TO USE FOR SPECIFIC INFORMATION"),
    "useful_code_snippets_and_templates": ("code", "USEFUL CODE SNIPPETS AND TEMPLATES"),
    "common_mistakes_and_correct_strategies": ("cms", "COMMON MISTAKES AND CORRECT STRATEGIES"),
    "problem_solving_heuristics_and_workflows": ("psw", "PROBLEM-SOLVING HEURISTICS AND WORKFLOWS"),
    "verification_checklist": ("vc", "VERIFICATION CHECKLIST"),
    "troubleshooting_and_pitfalls": ("ts", "TROUBLESHOOTING AND PITFALLS"),
}
_OTHERS = {"others": ("misc", "OTHERS")}
SECTIONS: dict[str, tuple[str, str]] = {**_GENERIC, **_APPWORLD, **_OTHERS}
SECTION_SETS: dict[str, tuple[str, ...]] = {"generic": (*_GENERIC, *_OTHERS), "appworld": (*_APPWORLD, *_OTHERS)}
_ALIASES = {"strategies": "strategies_and_insights", "formulas": "formulas_and_calculations",
            "code_snippets": "code_snippets_and_templates", "common_mistakes": "common_mistakes_to_avoid",
            "heuristics": "problem_solving_heuristics", "context_clues": "context_clues_and_indicators",
            "other": "others", "hard_rules": "strategies_and_hard_rules",
            "apis": "apis_to_use_for_specific_information", "troubleshooting": "troubleshooting_and_pitfalls"}
# guideline category (ALTK-Evolve style) <-> section, for converting between the two artifact kinds
_SECTION_OF_CATEGORY = {"strategy": "strategies_and_insights", "recovery": "common_mistakes_to_avoid",
                        "optimization": "problem_solving_heuristics"}
_CATEGORY_OF_SECTION = {"common_mistakes_to_avoid": "recovery", "formulas_and_calculations": "optimization",
                        "code_snippets_and_templates": "optimization", "problem_solving_heuristics": "strategy",
                        "common_mistakes_and_correct_strategies": "recovery",
                        "troubleshooting_and_pitfalls": "recovery",
                        "useful_code_snippets_and_templates": "optimization"}

ID_PATTERN = re.compile(r"^([a-z]+)-(\d{5,})$")
CITE_EXAMPLE = "[str-00001]"
HEADER = ("ACE playbook: lessons from earlier tasks. Each bullet reads [id] helpful=X harmful=Y :: advice, "
          "where X and Y count how often it helped or hurt.")
# The reference's Generator returns the ids it used in a `bullet_ids` field; a benchmark agent's reply is text
# or a tool call, so the field is one line of that text (read back by roles.cited_ids).
CITE_LINE = ('When bullets guide a reply, end that reply with one line naming their ids, '
             'e.g. bullet_ids: ["str-00001"]')


def section_name(raw: str, allowed: tuple[str, ...] | None = None) -> str | None:
    """Accept a section name, its heading, its slug or a short alias; None when unknown (or not in `allowed`)."""
    key = re.sub(r"[\s\-]+", "_", str(raw).strip().lower().replace("&", "and")).strip("_:")
    names = allowed or tuple(SECTIONS)
    if key in names:
        return key
    for name in names:  # a slug or a heading, within the allowed set first (`code` exists in both sets)
        slug, heading = SECTIONS[name]
        if key in (slug, re.sub(r"[\s\-]+", "_", heading.lower().replace("&", "and"))):
            return name
    alias = _ALIASES.get(key)
    return alias if alias in names else None


def one_line(text: str) -> str:
    """Bullets are single lines: the rendered format is line-based."""
    return " ".join(str(text).split())


@dataclass(frozen=True)
class Bullet:
    id: str
    section: str
    content: str
    helpful: int = 0
    harmful: int = 0
    created: int = 0  # the id counter when it was added: smaller = older

    def __post_init__(self) -> None:
        if self.section not in SECTIONS:
            raise ValueError(f"bullet {self.id!r}: unknown section {self.section!r}; valid: {', '.join(SECTIONS)}")
        if not ID_PATTERN.match(self.id):
            raise ValueError(f"bullet id {self.id!r} is not <slug>-<5+ digits>")
        if not self.content or self.content != one_line(self.content):
            raise ValueError(f"bullet {self.id!r}: content must be one non-empty line")
        if self.helpful < 0 or self.harmful < 0:
            raise ValueError(f"bullet {self.id!r}: counters must be >= 0")

    @property
    def line(self) -> str:
        return f"[{self.id}] helpful={self.helpful} harmful={self.harmful} :: {self.content}"

    @property
    def used(self) -> bool:
        return self.helpful + self.harmful > 0

    @property
    def number(self) -> int:
        """The id's counter (`<slug>-<digits>`, checked above)."""
        return int(self.id.rsplit("-", 1)[1])


class Playbook:
    """An ordered set of bullets plus the id counter. Treat as immutable: edits return a copy."""

    def __init__(self, bullets: Iterable[Bullet] = (), next_id: int = 1):
        self._bullets: dict[str, Bullet] = {}
        for b in bullets:
            if b.id in self._bullets:
                raise ValueError(f"duplicate bullet id {b.id!r}")
            self._bullets[b.id] = b
        top = max((b.number for b in self._bullets.values()), default=0)
        self.next_id = max(int(next_id), top + 1)

    # --- reading -----------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._bullets)

    def __contains__(self, bullet_id: str) -> bool:
        return bullet_id in self._bullets

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Playbook) and self.bullets == other.bullets and self.next_id == other.next_id

    def get(self, bullet_id: str) -> Bullet | None:
        return self._bullets.get(bullet_id)

    def bullet(self, bullet_id: str) -> Bullet:
        """A bullet known to be here (KeyError otherwise)."""
        return self._bullets[bullet_id]

    @property
    def bullets(self) -> list[Bullet]:
        """In rendering order: by section, then by age."""
        order = {name: i for i, name in enumerate(SECTIONS)}
        return sorted(self._bullets.values(), key=lambda b: (order[b.section], b.created, b.id))

    def render(self, cite: bool = True) -> str:
        """The delivered text. Every bullet line is exactly `[id] helpful=X harmful=Y :: text`."""
        if not self._bullets:
            return ""
        lines = ["<ace_playbook>", HEADER]
        if cite:
            lines.append(CITE_LINE)
        current = None
        for b in self.bullets:
            if b.section != current:
                current = b.section
                lines.append(f"## {SECTIONS[b.section][1]}")
            lines.append(b.line)
        lines.append("</ace_playbook>")
        return "\n".join(lines)

    def stats(self) -> dict[str, Any]:
        bullets = self.bullets
        by_section: dict[str, dict[str, int]] = {}
        for b in bullets:
            row = by_section.setdefault(b.section, {"count": 0, "helpful": 0, "harmful": 0})
            row["count"] += 1
            row["helpful"] += b.helpful
            row["harmful"] += b.harmful
        return {"bullets": len(bullets), "never_used": sum(not b.used for b in bullets),
                "net_harmful": sum(b.harmful > b.helpful for b in bullets), "by_section": by_section}

    def as_guidelines(self) -> list[Guideline]:
        """The bullets as plain guidelines, so any strategy can read a playbook artifact."""
        return [Guideline(id=b.id, text=b.content, category=_CATEGORY_OF_SECTION.get(b.section, "strategy"))
                for b in self.bullets]

    # --- editing (each returns a new Playbook) -------------------------------------------------
    def _with(self, bullets: Iterable[Bullet], next_id: int | None = None) -> "Playbook":
        return Playbook(bullets, self.next_id if next_id is None else next_id)

    def add(self, section: str, content: str) -> tuple["Playbook", Bullet]:
        name = section_name(section)
        if name is None:
            raise ValueError(f"unknown section {section!r}")
        bullet = Bullet(id=f"{SECTIONS[name][0]}-{self.next_id:05d}", section=name, content=one_line(content),
                        created=self.next_id)
        return self._with([*self._bullets.values(), bullet], self.next_id + 1), bullet

    def put(self, bullet: Bullet) -> "Playbook":
        """The same playbook with one existing bullet swapped for a new version (same id)."""
        if bullet.id not in self._bullets:
            raise KeyError(bullet.id)
        return self._with(bullet if b.id == bullet.id else b for b in self._bullets.values())

    def remove(self, *bullet_ids: str) -> "Playbook":
        missing = [i for i in bullet_ids if i not in self._bullets]
        if missing:
            raise KeyError(", ".join(missing))
        gone = set(bullet_ids)
        return self._with(b for b in self._bullets.values() if b.id not in gone)

    def count(self, tags: dict[str, str]) -> "Playbook":
        """Apply Reflector tags: helpful / harmful add one to that counter, neutral changes nothing."""
        out = self
        for bullet_id, tag in tags.items():
            b = out.get(bullet_id)
            if b is None or tag not in ("helpful", "harmful"):
                continue
            out = out.put(replace(b, helpful=b.helpful + (tag == "helpful"), harmful=b.harmful + (tag == "harmful")))
        return out

    # --- conversion and files ------------------------------------------------------------------
    @classmethod
    def from_guidelines(cls, guidelines: Iterable[Guideline]) -> "Playbook":
        """Plain guideline memory as a fresh playbook: counters start at zero, ids are new."""
        pb = cls()
        for g in guidelines:
            pb, _ = pb.add(_SECTION_OF_CATEGORY.get(g.category, "others"), g.text)
        return pb

    def to_rows(self) -> list[dict[str, Any]]:
        return [asdict(b) for b in self.bullets]

    def save(self, path: str | Path, meta: dict[str, Any] | None = None) -> None:
        """Atomic write (temp file + rename), `_meta` line first."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        head = {**(meta or {}), "kind": KIND, "next_id": self.next_id}
        lines = [json.dumps({"_meta": head}, ensure_ascii=False) + "\n"]
        lines += [json.dumps(row, ensure_ascii=False) + "\n" for row in self.to_rows()]
        write_text_atomic(path, "".join(lines))


_BULLET_FIELDS = set(Bullet.__dataclass_fields__)


def artifact_kind(path: str | Path) -> str | None:
    """The `_meta.kind` of a memory artifact's first line, or None."""
    with Path(path).open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                try:
                    row = json.loads(line)
                except json.JSONDecodeError:
                    return None
                return row.get("_meta", {}).get("kind") if isinstance(row, dict) else None
    return None


def load_playbook(path: str | Path) -> tuple[Playbook, dict[str, Any]]:
    """Read an ace_playbook artifact strictly; errors name file:line."""
    path = Path(path)
    if not path.is_file():
        raise MemoryFileError(f"playbook file not found: {path}")
    rows, meta = read_rows(path, _BULLET_FIELDS, what="bullet")
    bullets: list[Bullet] = []
    for where, row in rows:
        try:
            bullets.append(Bullet(**row))
        except (TypeError, ValueError) as exc:
            raise MemoryFileError(f"{where}: {exc}") from None
    if meta.get("kind") != KIND:
        raise MemoryFileError(f"{path}: not an ACE playbook (_meta.kind must be {KIND!r})")
    return Playbook(bullets, int(meta.get("next_id", 1))), meta


def learned_with_labels(meta: dict[str, Any]) -> bool | None:
    """From a playbook artifact's meta: `learned_from.ground_truth` (provenance) or `ground_truth`; None when
    unknown."""
    learned = meta.get("learned_from")
    flag = learned.get("ground_truth") if isinstance(learned, dict) else None
    flag = meta.get("ground_truth") if flag is None else flag
    return flag if isinstance(flag, bool) else None
