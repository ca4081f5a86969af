"""The script for the scripted oracle model on AppWorld: run the gold solution that train and dev ship. Kept out
of the AppWorld adapter, which asks for it only when the model is scripted."""

from __future__ import annotations

from typing import Any

from harness.benchmarks.appworld.pool import EngineError


def oracle_script(task_id: str, opened: dict[str, Any]) -> dict[str, Any]:
    """`opened`: the engine's answer to `open` with want_gold (its `gold_code`, when the split ships one)."""
    if not opened.get("gold_code"):
        raise EngineError(f"{task_id}: no gold solution in the data (test splits ship none); "
                          "model=oracle runs on train and dev only")
    return {"code_steps": [opened["gold_code"]]}
