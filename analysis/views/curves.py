"""The data behind two curves (drawn by analysis.views.plots):

* dose_points: success vs delivered memory tokens per strategy family, from the summary. A family is a
  strategy with cells that differ only in their options (`core_retrieval (top_k=3)`, record `strategy_variant`,
  e.g. +experiment=dose); x = memory tokens per task (mean over episodes, as the tables' `memory/task`), y =
  success with its 95% bootstrap CI over tasks (analysis.statistics.metrics). The `none` row of the same cell is the
  baseline.
* learning_points: for a strategy that learns online, success vs episodes seen in each trial stream (streams are
  independent: each learns from its own episodes only), a rolling mean over `window` episodes with its 95%
  bootstrap CI (analysis.statistics.stats), and the memory's size when each episode ran. Read from the records' own
  `episodes_seen` and `memory_size` (the strategy's record facts, e.g. ace_online's); records without them
  are not an online learner's and are left out.
"""

from __future__ import annotations

import re

import pandas as pd

from analysis.runs.load import family
from analysis.statistics import stats
from analysis.statistics.metrics import BASELINE, CELL, with_assembly

VARIANT = re.compile(r" \(([\w.]+=[^)]*)\)")  # `name (key=value)`; `ace (no GT)` is not a variant
WINDOW = 10


def variant_of(label: str) -> str | None:
    m = VARIANT.search(str(label))
    return m.group(1) if m else None


def dose_points(summary: pd.DataFrame) -> dict[tuple, dict]:
    """{cell key: {"points": frame(family, strategy, variant, tokens, success, lo, hi), "baseline": (y, lo, hi)
    or None}} for each (benchmark, split, model, assembly) cell with at least one variant row."""
    out: dict[tuple, dict] = {}
    if summary.empty:
        return out
    for key, cell in with_assembly(summary).groupby(CELL, sort=False, dropna=False):
        labels = cell["strategy"].astype(str)
        dosed = {family(s) for s in labels if variant_of(s)}
        if not dosed:
            continue
        rows = cell[labels.map(family).isin(dosed) & (labels != BASELINE)]
        points = pd.DataFrame({"family": rows["strategy"].map(family), "strategy": rows["strategy"],
                               "variant": rows["strategy"].map(variant_of), "tokens": rows["memory_tokens/task"],
                               "success": rows["success"], "lo": rows["success_lo"], "hi": rows["success_hi"]})
        out[key] = {"points": points.sort_values(["family", "tokens"]).reset_index(drop=True),
                    "baseline": baseline(cell)}
    return out


def baseline(cell: pd.DataFrame) -> tuple[float, float, float] | None:
    """The cell's `none` row as (success, lo, hi), the band a curve is drawn against; None without one."""
    base = cell[cell["strategy"].astype(str) == BASELINE]
    return None if base.empty else (float(base.iloc[0]["success"]), float(base.iloc[0]["success_lo"]),
                                    float(base.iloc[0]["success_hi"]))


def learning_points(records: pd.DataFrame, window: int = WINDOW) -> pd.DataFrame:
    """One row per episode of an online learner: cell, strategy, run_dir, trial (the stream), episodes_seen,
    success, the rolling rate and its CI over the last `window` episodes of that stream, memory_size."""
    columns = [*CELL, "strategy", "run_dir", "trial", "episodes_seen", "success", "rate", "lo", "hi",
               "memory_size"]
    if records.empty or "episodes_seen" not in records or records["episodes_seen"].isna().all():
        return pd.DataFrame(columns=columns)
    learned = with_assembly(records[records["episodes_seen"].notna()])
    if "memory_size" not in learned:
        learned = learned.assign(memory_size=float("nan"))
    if "error" in learned:  # an infra episode counts as a failure (the tables' convention)
        learned = learned.assign(success=learned["success"].astype(bool) & (learned["error"] != "infra"))
    rows = []
    for key, stream in learned.groupby([*CELL, "strategy", "run_dir", "trial"], sort=False, dropna=False):
        stream = stream.sort_values("episodes_seen")
        outcomes = stream["success"].astype(float).tolist()
        for i, (_, r) in enumerate(stream.iterrows()):
            recent = outcomes[max(0, i + 1 - window): i + 1]
            lo, hi = stats.wilson_ci(int(sum(recent)), len(recent))
            rows.append({**dict(zip([*CELL, "strategy", "run_dir", "trial"], key)),
                         "episodes_seen": int(r["episodes_seen"]), "success": bool(r["success"]),
                         "rate": sum(recent) / len(recent), "lo": lo, "hi": hi, "memory_size": r["memory_size"]})
    return pd.DataFrame(rows, columns=columns)
