"""Rows over corrupted memory are labelled as such (harness/memory/corrupt.py writes `_meta.corrupted`).

`corruption_labels` adds `[corrupted: contradict 30%]` to the strategy label of every record whose memory
artifact (ACE's `playbook` option first, as analysis.runs.identity reads it) carries `_meta.corrupted`, so a corrupted
artifact is never read as a clean one, whatever its fingerprint; `corruption_of` reads the kind and share back from
a label (that tag, or a `+experiment=robustness` variant such as `contradict=30%`).
"""

from __future__ import annotations

import re

import pandas as pd

from analysis.runs.identity import artifact_meta, tag as add_tag

KINDS = ("contradict", "stale", "irrelevant", "duplicate")  # harness/memory/corrupt.py
_CORRUPTED = re.compile(r"\b(" + "|".join(KINDS) + r")[= ](\d+(?:\.\d+)?)%")
_KIND = "(?:" + "|".join(KINDS) + ")"
_NAMED = re.compile(r" ?\(" + _KIND + r"=[\d.]+%\)|(?:, )?corrupted: " + _KIND + r" [\d.]+%")  # variant or tag


def corruption_of(label: str) -> tuple[str, float] | None:
    """(kind, percent) a strategy label names, or None."""
    m = _CORRUPTED.search(str(label))
    return (m.group(1), float(m.group(2))) if m else None


def tag(meta: dict) -> str | None:
    """The label part for an artifact's `_meta.corrupted` (`corrupted: contradict 30%`); None when clean."""
    facts = meta.get("corrupted") if isinstance(meta, dict) else None
    if not isinstance(facts, dict) or "kind" not in facts or not float(facts.get("rate", 0)):
        return None  # a 0 % corruption corrupted nothing: the clean artifact
    return f"corrupted: {facts['kind']} {100 * float(facts.get('rate', 0)):g}%"


def corruption_labels(df: pd.DataFrame) -> pd.Series:
    """The strategy label, tagged where the record's memory artifact is a corrupted one."""
    column = "memory_artifact" if "memory_artifact" in df else "memory" if "memory" in df else None
    if column is None:
        return df["strategy"]
    tags = df[column].map(lambda p: tag(artifact_meta(p)) if isinstance(p, str) and p else None)
    return pd.Series([add_tag(s, t) if isinstance(t, str) and corruption_of(s) != corruption_of(t) else s
                      for s, t in zip(df["strategy"], tags)], index=df.index)  # a variant naming it: said once


def split_label(label: str) -> tuple[str, str]:
    """(the label without its corruption, 'contradict 30%' or ''): the robustness rows' strategy and rate, each
    in its own column; a 0 % row is the clean artifact, `full`."""
    found = corruption_of(label)
    if found is None:
        return str(label), ""
    bare = _NAMED.sub("", str(label)).replace(" []", "").replace("[, ", "[").replace(", ]", "]").strip()
    return bare, f"{found[0]} {found[1]:g}%"


def corruption_column(shown: pd.DataFrame) -> pd.DataFrame:
    """A display with a `corrupted` column after `strategy` when a row names a corruption, the label without it."""
    if "strategy" not in shown or not shown["strategy"].map(corruption_of).notna().any():
        return shown
    parts = [split_label(s) for s in shown["strategy"]]
    out = shown.assign(strategy=[p[0] for p in parts])
    out.insert(list(out.columns).index("strategy") + 1, "corrupted", [p[1] or "-" for p in parts])
    return out
