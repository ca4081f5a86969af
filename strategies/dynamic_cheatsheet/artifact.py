"""Dynamic Cheatsheet's train artifact (`make cheatsheet`, harness/memory/cheatsheet.py): where each variant's
stream stands after the train episodes, in order, so that `dynamic_cheatsheet` can start from it when handed it
as `memory_by_strategy.dynamic_cheatsheet`.

Rows: `dc-cheatsheet-<variant>` per variant, the cheatsheet its curator wrote last; `dc-pair-<n>` per train
episode, the (task, what the agent did) pair retrieval_synthesis retrieves from (task as `source_task_text`)."""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

from strategies.base import Guideline
from strategies.dynamic_cheatsheet.cheatsheet import VARIANTS
from memory_kit.start_artifact import load_start

KIND = "dc_cheatsheet"
BUILD = "make cheatsheet"
_SHEET, _PAIR = "dc-cheatsheet-", "dc-pair-"


def artifact_rows(cheatsheets: Mapping[str, str], pairs: Sequence[tuple[str, str, str]]) -> list[Guideline]:
    """`cheatsheets`: variant -> its last cheatsheet; `pairs`: (task id, task as seen, what the agent did)."""
    sources = tuple(dict.fromkeys(task_id for task_id, _, _ in pairs))
    rows = [Guideline(id=f"{_SHEET}{variant}", text=text, source_task_ids=sources)
            for variant, text in cheatsheets.items()]
    return rows + [Guideline(id=f"{_PAIR}{n}", text=done, source_task_ids=(task_id,), source_task_text=task)
                   for n, (task_id, task, done) in enumerate(pairs, start=1)]


def start_state(items: Sequence[Guideline], variant: str, path: str) -> dict[str, Any]:
    """The stream state (Cheatsheet.set_state_data) variant `variant` starts from."""
    sheets = {g.id[len(_SHEET):]: g.text for g in items if g.id.startswith(_SHEET)}
    if set(sheets) != set(VARIANTS):
        raise ValueError(f"{path}: a {KIND} artifact holds one cheatsheet per variant {list(VARIANTS)}; it has "
                         f"{sorted(sheets)}: rebuild it with `{BUILD}`")
    pairs = [g for g in items if g.id.startswith(_PAIR)]
    return {"cheatsheet": sheets[variant], "inputs": [g.source_task_text for g in pairs],
            "outputs": [g.text for g in pairs], "lost": []}


def load_start_state(path: Optional[str], variant: str) -> Optional[dict[str, Any]]:
    """The start of a `variant` stream from the artifact at `path`; None without one (the reference's "(empty)")."""
    items, _ = load_start(path, KIND, "dynamic_cheatsheet", BUILD)
    return start_state(items, variant, str(path)) if path else None
