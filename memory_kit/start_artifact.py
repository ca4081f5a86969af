"""Where an online design starts: no artifact (its paper's empty start), or the train artifact of its kind handed
to it as `memory_by_strategy.<name>` (docs/strategies.md "Where an online learner starts"); another kind is refused
before anything runs (the strategy's `check_memory`)."""

from __future__ import annotations

from typing import Any, Optional

from strategies import Guideline


def load_start(path: Optional[str], kind: str, strategy: str, build: str) -> tuple[list[Guideline], dict[str, Any]]:
    """(items, meta) of the train artifact at `path`, ([], {}) for none; `build`: the command that writes one."""
    if not path:
        return [], {}
    from memory_kit.memory_file import load_memory

    items, meta = load_memory(path)
    if meta.get("kind") != kind:
        raise ValueError(f"strategy {strategy!r} starts from a {kind} artifact (_meta.kind {kind!r}); {path} is "
                         f"{meta.get('kind')!r}: build one with `{build}` and pass +memory_by_strategy.{strategy}="
                         f"<path>, or leave the entry out to start empty")
    return items, meta
