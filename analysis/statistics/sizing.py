"""How many tasks would settle a comparison, and how far a pilot's figure can be trusted: a bootstrap over the
pilot's tasks gives the range (its 10th-90th percentiles), because one pilot's estimate of the spread and of the
difference moves a lot (one truth gave 190-925 tasks across seeds).

The per-task parts of a paired difference (the same split as analysis.power): d_t = the task's mean difference
over its trials (trials paired by index), w_t = the variance of its per-trial differences (m >= 2 trials); the
difference's variance at T trials on new tasks is tau2 + within / T with within = mean(w_t) and
tau2 = max(0, var(d_t) - within / m).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.fmt import missing, model_label

N_BOOT = 400
SEED = 0
SPAN = (10, 90)  # the percentiles printed as the range


@dataclass(frozen=True)
class Parts:
    """Per task, on the (task, trial) pairs both strategies ran: d (mean difference), w (variance of the
    per-trial differences, None with one trial), m (trials, the fewest any task has)."""

    tasks: pd.Index
    d: np.ndarray
    w: np.ndarray | None
    m: int

    @property
    def n(self) -> int:
        return len(self.d)


def parts(a: pd.DataFrame, b: pd.DataFrame, column: str = "success") -> Parts:
    """From two strategies' records (already restricted to the records that count)."""
    ya = a.groupby(["task_id", "trial"])[column].mean().astype(float)
    yb = b.groupby(["task_id", "trial"])[column].mean().astype(float)
    both = pd.concat([ya.rename("a"), yb.rename("b")], axis=1, join="inner").dropna()
    if both.empty:
        return Parts(pd.Index([]), np.array([]), None, 0)
    diff = (both["a"] - both["b"]).groupby(level="task_id")
    d, m = diff.mean(), int(diff.size().min())
    w = diff.var(ddof=1).reindex(d.index).to_numpy(dtype=float) if m >= 2 else None
    return Parts(d.index, d.to_numpy(dtype=float), w, m)


def resample(n: int, n_boot: int = N_BOOT, seed: int = SEED) -> np.ndarray:
    """(n_boot, n) task indices: tasks drawn with replacement, the same draw for every pair of a cell."""
    return np.random.default_rng(seed).integers(0, n, size=(n_boot, n))


def moments(p: Parts, idx: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(mean d, var d, mean w) per bootstrap draw (one value each without `idx`)."""
    d = p.d[None, :] if idx is None else p.d[idx]
    var = d.var(axis=1, ddof=1) if d.shape[1] > 1 else np.zeros(d.shape[0])
    w = np.zeros(d.shape[0]) if p.w is None else (p.w[None, :] if idx is None else p.w[idx]).mean(axis=1)
    return d.mean(axis=1), var, w


def var_at(var: np.ndarray, w: np.ndarray, m: int, trials: int) -> np.ndarray:
    """The per-task difference's variance at `trials` trials: tau2 + within / trials."""
    return np.maximum(0.0, var - w / m) + w / trials


def span(values) -> tuple[float, float]:
    """The printed range of a bootstrap's figures (inf where a draw could not be settled)."""
    lo, hi = np.percentile(np.asarray(values, dtype=float), SPAN)
    return float(lo), float(hi)


def span_text(lo_hi: tuple[float, float]) -> str:
    lo, hi = lo_hi
    return f"{int(lo):,}-" + ("unbounded" if np.isinf(hi) else f"{int(hi):,}")


def range_lines(table: pd.DataFrame, grid) -> list[str]:
    """'<model> full vs none: 1 trial 420 (190-925), 2 trials ...': analysis.power's tasks@T and its range."""
    lines = []
    for _, r in table.iterrows():
        cells = [f"{t} trial{'s' if t > 1 else ''} {int(r[f'tasks@{t}']):,} ({span_text(r[f'tasks@{t} range'])})"
                 for t in grid if isinstance(r.get(f"tasks@{t} range"), tuple) and not missing(r[f"tasks@{t}"])]
        if cells:
            lines.append(f"{model_label(r['model'])} {r['strategy']} vs none: " + ", ".join(cells))
    return lines
