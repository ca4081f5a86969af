"""A design's rows learned otherwise than its memory usually is, named apart: `ace (no GT)`, `ace_online (GT)`."""

from __future__ import annotations

import pandas as pd


def ground_truth_labels(df: pd.DataFrame) -> pd.Series:
    """`ace (no GT)`: a playbook learned without labels; `ace_online (GT)`: an online learner given them. A row is
    named so when its `memory_ground_truth` departs from what its design declares usual (`labelled_by_default`,
    strategies/declaration.py), so the two variants of a design never share a row."""
    if "memory_ground_truth" not in df:
        return df["strategy"]
    usual = df["strategy"].map({name: _labelled_by_default(str(name)) for name in df["strategy"].unique()})
    flag = df["memory_ground_truth"]
    no_gt = (usual == True) & (flag == False)  # noqa: E712 (None = unknown or undeclared: left as is)
    gt = (usual == False) & (flag == True)  # noqa: E712
    named = df["strategy"].astype(str)
    return df["strategy"].where(~no_gt, named + " (no GT)").where(~gt, named + " (GT)")


def _labelled_by_default(name: str) -> bool | None:
    from strategies import declaration

    try:
        return declaration(name).labelled_by_default
    except Exception:  # a strategy this install does not have (a plugin's run): its rows are never named
        return None
