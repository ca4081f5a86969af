"""Rows over corrupted memory are labelled as such (harness/memory/corrupt.py writes `_meta.corrupted`).

`corruption_labels` adds `[corrupted: contradict 30%]` to the strategy label of every record whose memory
artifact (ACE's `playbook` option first, as analysis.identity reads it) carries `_meta.corrupted`, so a corrupted
artifact is never read as a clean one, whatever its fingerprint; `corruption_of` reads the kind and share back from
a label (that tag, or a `+experiment=robustness` variant such as `contradict=30%`).
"""

from __future__ import annotations

import re

import pandas as pd

from analysis.identity import artifact_meta, tag as add_tag

KINDS = ("contradict", "stale", "irrelevant", "duplicate")  # harness/memory/corrupt.py
_CORRUPTED = re.compile(r"\b(" + "|".join(KINDS) + r")[= ](\d+(?:\.\d+)?)%")


def corruption_of(label: str) -> tuple[str, float] | None:
    """(kind, percent) a strategy label names, or None."""
    m = _CORRUPTED.search(str(label))
    return (m.group(1), float(m.group(2))) if m else None


def tag(meta: dict) -> str | None:
    """The label part for an artifact's `_meta.corrupted` (`corrupted: contradict 30%`); None when clean."""
    facts = meta.get("corrupted") if isinstance(meta, dict) else None
    if not isinstance(facts, dict) or "kind" not in facts:
        return None
    return f"corrupted: {facts['kind']} {100 * float(facts.get('rate', 0)):g}%"


def corruption_labels(df: pd.DataFrame) -> pd.Series:
    """The strategy label, tagged where the record's memory artifact is a corrupted one."""
    column = "memory_artifact" if "memory_artifact" in df else "memory" if "memory" in df else None
    if column is None:
        return df["strategy"]
    tags = df[column].map(lambda p: tag(artifact_meta(p)) if isinstance(p, str) and p else None)
    return pd.Series([add_tag(s, t) if isinstance(t, str) else s for s, t in zip(df["strategy"], tags)], index=df.index)
