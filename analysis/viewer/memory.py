"""What memory each agent step was given, from the record's ledger, with the guidelines' text where it can be read.

Per step the record's `step_usage` names the delivered ids (`delivered_ids`), those a memory budget dropped
(`dropped_ids`), those the context policy dropped to fit the window (`context_dropped_ids`) and the step's
tokens and cost; older records carry only `delivered` / `dropped` (one list per step). The text of an id comes
from the memory file the record names (`memory`), read only when it lies inside the working directory or a run
directory, is a `.jsonl` file, and only for the ids delivered; ids it lacks (an online ACE playbook's new
bullets) are shown without text.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path


@dataclass
class Step:
    index: int
    phase: str = "act"
    delivered: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)  # by the memory budget
    context_dropped: list[str] = field(default_factory=list)  # by the context policy (window)
    prompt_tokens: float | None = None
    completion_tokens: float | None = None
    memory_tokens: float | None = None
    cost_usd: float | None = None
    summarised_turns: int = 0


def _ids(value) -> list[str]:
    return [str(v) for v in value] if isinstance(value, (list, tuple)) else []


def steps(record: dict) -> list[Step]:
    """The agent steps of a record (answer-phase calls included, marked), from `step_usage` or `delivered`."""
    usage = record.get("step_usage")
    delivered, dropped = record.get("delivered"), record.get("dropped")
    delivered = delivered if isinstance(delivered, list) else []
    dropped = dropped if isinstance(dropped, list) else []
    if isinstance(usage, list) and usage:
        out = []
        for i, u in enumerate(u for u in usage if isinstance(u, dict)):
            out.append(Step(index=int(u.get("index", i)), phase=str(u.get("phase") or "act"),
                            delivered=_ids(u.get("delivered_ids", delivered[i] if i < len(delivered) else [])),
                            dropped=_ids(u.get("dropped_ids", dropped[i] if i < len(dropped) else [])),
                            context_dropped=_ids(u.get("context_dropped_ids")),
                            prompt_tokens=u.get("prompt_tokens"), completion_tokens=u.get("completion_tokens"),
                            memory_tokens=u.get("memory_tokens"), cost_usd=u.get("cost_usd"),
                            summarised_turns=int(u.get("summarised_turns") or 0)))
        return out
    return [Step(index=i, delivered=_ids(d), dropped=_ids(dropped[i] if i < len(dropped) else []))
            for i, d in enumerate(delivered)]


def acting(all_steps: list[Step]) -> list[Step]:
    """The working steps (one per model call that acts), numbered as the conversation's assistant turns."""
    return [s for s in all_steps if s.phase == "act"]


def readable_memory(name: str | None, roots: tuple[Path, ...]) -> Path | None:
    """The memory file a record names, when it is a .jsonl inside one of `roots`; else None."""
    if not name or not str(name).endswith(".jsonl"):
        return None
    path = Path(name)
    for root in roots:
        candidate = (path if path.is_absolute() else root / path).resolve()
        if candidate.is_relative_to(root.resolve()) and candidate.is_file():
            return candidate
    return None


@lru_cache(maxsize=32)
def guidelines(path: Path) -> dict[str, dict]:
    """{id: guideline} of a memory file (its `_meta` line and malformed lines skipped)."""
    out: dict[str, dict] = {}
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return out
    for line in lines:
        try:
            item = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(item, dict) and "id" in item:
            out[str(item["id"])] = item
    return out
