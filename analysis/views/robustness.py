"""The data behind robustness.png (drawn by analysis.views.plots): success against the share of corrupted memory.

A row is a robustness point when its strategy label names a corruption: the variant of a
`+experiment=robustness` cell (`full (contradict=30%)`) or the tag the tables give any row whose memory
artifact carries `_meta.corrupted` (`full [corrupted: contradict 30%]`, analysis.runs.load). Per (benchmark, split,
model, assembly) cell: one line per strategy family and kind, x = the corrupted share (%), y = success with its 95 %
bootstrap CI over tasks (analysis.statistics.metrics); the cell's `none` row is the baseline band.
"""

from __future__ import annotations

import pandas as pd

from analysis.runs.corruption import corruption_of
from analysis.runs.load import family
from analysis.statistics.metrics import CELL, with_assembly
from analysis.views.curves import baseline


def points(summary: pd.DataFrame) -> dict[tuple, dict]:
    """{cell key: {"points": frame(family, kind, rate, strategy, success, lo, hi), "baseline": (y, lo, hi) or
    None}} for each cell with a corrupted row."""
    out: dict[tuple, dict] = {}
    if summary.empty:
        return out
    for key, cell in with_assembly(summary).groupby(CELL, sort=False, dropna=False):
        found = cell["strategy"].map(corruption_of)
        rows = cell[found.notna()]
        if rows.empty:
            continue
        frame = pd.DataFrame({"family": rows["strategy"].map(family), "kind": found[found.notna()].map(lambda c: c[0]),
                              "rate": found[found.notna()].map(lambda c: c[1]), "strategy": rows["strategy"],
                              "success": rows["success"], "lo": rows["success_lo"], "hi": rows["success_hi"]})
        out[key] = {"points": frame.sort_values(["family", "kind", "rate"]).reset_index(drop=True),
                    "baseline": baseline(cell)}
    return out


def slopes(points_frame: pd.DataFrame) -> dict[str, float]:
    """Per family: success lost (points) from its lowest to its highest corrupted share, the curve's drop."""
    out = {}
    for name, g in points_frame.groupby("family", sort=False):
        g = g.sort_values("rate")
        out[name] = 100 * float(g["success"].iloc[0] - g["success"].iloc[-1])
    return out
