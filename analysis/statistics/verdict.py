"""What a difference between two cells means: the one rule the Δ column, the harm list, the A/A band and
recommend read, so they cannot disagree (issue 37).

A difference (a strategy against `none`, or a cell's halves against each other) is

* **shown** (better / worse) when the tables' paired test over tasks finds it (McNemar / sign-flip, two-sided,
  p < alpha);
* else **within noise** when it lies inside the pair's A/A band: the 95 % spread of the difference an identical
  pair shows at this size (each task's trials of both cells pooled and split at random into the two sides, the
  exchangeability null the harm list's `chance` also uses); with one trial (no band) when the run could see a Δ
  this big (|Δ| >= MDΔ) and the test did not;
* else **not enough evidence** (`underpowered`): outside the band, or below MDΔ with no band.

Per task the harm list is **concentrated** when more tasks are harmed than trial noise plausibly lists: under
the same null each task is harmed with its own chance, so the count is Poisson-binomial; concentrated when
P(count >= harmed) < alpha. Where the mean view and the per-task or band view answer differently, `reconciling`
says in one line how they fit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis import fmt
from analysis.statistics.stats import ALPHA

SHOWN, NOISE, UNDERPOWERED = "shown", "within noise", "not enough evidence"
N_SPLITS, SEED = 2000, 0


def outcomes(df: pd.DataFrame) -> np.ndarray:
    """tasks x m matrix of 0/1 outcomes, m = the fewest trials of a task (each task's first m trials)."""
    df = df.assign(task_id=df["task_id"].astype(str)).sort_values(["task_id", "trial"])
    m = int(df.groupby("task_id").size().min())
    return np.array([g["success"].astype(float).to_numpy()[:m] for _, g in df.groupby("task_id")])


def split_band(x: np.ndarray, a: int, n_splits: int = N_SPLITS, seed: int = SEED) -> float:
    """95 % quantile of |mean difference| between each task's first `a` columns and the rest, over random
    re-splits of every task's columns (trial noise only: the tasks are the same on both sides); fraction."""
    tasks, m = x.shape
    n_splits = min(n_splits, max(200, 4_000_000 // max(1, tasks * m)))  # a big run: fewer splits, bounded memory
    order = np.random.default_rng(seed).random((n_splits, tasks, m)).argsort(axis=2)
    shuffled = np.take_along_axis(np.broadcast_to(x, (n_splits, tasks, m)), order, axis=2)
    diffs = (shuffled[:, :, :a].mean(axis=2) - shuffled[:, :, a:].mean(axis=2)).mean(axis=1)
    return float(np.quantile(np.abs(diffs), 0.95))


def pair_band_pts(mine: pd.DataFrame, base: pd.DataFrame) -> float:
    """The A/A band for the difference of two cells (points): their trials pooled per task, split at random into
    two sides of m; nan with one trial per side (trial noise cannot be told from task spread)."""
    shared = set(mine["task_id"].astype(str)) & set(base["task_id"].astype(str))
    if not shared:
        return math.nan
    xs, x0 = (outcomes(d[d["task_id"].astype(str).isin(shared)]) for d in (mine, base))
    m = min(xs.shape[1], x0.shape[1])
    if m < 2:
        return math.nan
    return 100 * split_band(np.concatenate([xs[:, :m], x0[:, :m]], axis=1), m)


def harm_tail(chances: tuple[float, ...], harmed: int) -> float:
    """P(at least `harmed` tasks listed harmed) when each task is listed with its own chance (Poisson-binomial)."""
    dist = np.zeros(len(chances) + 1)
    dist[0] = 1.0
    for p in chances:
        dist[1:] = dist[1:] * (1 - p) + dist[:-1] * p
        dist[0] *= 1 - p
    return float(dist[harmed:].sum()) if harmed <= len(chances) else 0.0


@dataclass(frozen=True)
class Verdict:
    """One difference and the numbers it rests on (points; nan where not known)."""

    delta_pts: float
    p: float = math.nan  # the paired test over tasks, two-sided
    mdd_pts: float = math.nan  # the minimum detectable Δ at this size (analysis.statistics.variance)
    band_pts: float = math.nan  # the pair's A/A band (95 %)
    harmed: int | None = None  # tasks the per-task rule lists harmed (analysis.statistics.harm); None: not compared
    chance: float = math.nan  # harmed tasks trial noise alone would list
    harm_p: float = math.nan  # P(count >= harmed) under that null
    alpha: float = ALPHA

    @property
    def shown(self) -> bool:
        return not math.isnan(self.p) and self.p < self.alpha

    @property
    def outside_band(self) -> bool | None:
        return None if math.isnan(self.band_pts) else abs(self.delta_pts) > self.band_pts

    @property
    def kind(self) -> str:
        if self.shown:
            return SHOWN
        if self.outside_band is not None:
            return UNDERPOWERED if self.outside_band else NOISE
        return NOISE if abs(self.delta_pts) >= self.mdd_pts else UNDERPOWERED  # nan MDΔ: not enough evidence

    @property
    def direction(self) -> str:
        return "better" if self.delta_pts > 0 else "worse" if self.delta_pts < 0 else "equal"

    @property
    def concentrated(self) -> bool:
        """More tasks harmed than trial noise plausibly lists."""
        return bool(self.harmed) and not math.isnan(self.harm_p) and self.harm_p < self.alpha

    def flag(self, short: bool = False) -> str:
        """The Δ column's tail: '' when shown, ' within noise' or ' underpowered', with MDΔ unless short."""
        if self.kind == SHOWN:
            return ""
        mdd = "" if short or math.isnan(self.mdd_pts) else f" (MDΔ {fmt.mdd(self.mdd_pts)})"
        return (" within noise" if self.kind == NOISE else " underpowered") + mdd

    def band_words(self) -> str:
        """'inside its A/A band ±X' / 'outside ...'; '' with no band."""
        if self.outside_band is None:
            return ""
        return f"{'outside' if self.outside_band else 'inside'} its A/A band ±{self.band_pts:.1f}"

    def harm_count(self) -> str:
        return f"{self.harmed} task{'' if self.harmed == 1 else 's'} harmed, {self.chance:.1f} expected by chance"

    def harm_words(self) -> str:
        return self.harm_count() + (": harm is concentrated" if self.concentrated else ": within chance")

    def reconciling(self) -> str | None:
        """One line where the mean view and the band or per-task view answer differently; None where they agree."""
        mean = f"mean Δ {fmt.signed(self.delta_pts)} pts"
        parts = []
        if self.kind != SHOWN and self.outside_band:
            parts.append(f"{mean} lies outside the pair's A/A band ±{self.band_pts:.1f} (beyond trial noise on these "
                         f"tasks) but is not shown over tasks at this size" +
                         ("" if math.isnan(self.mdd_pts) else f" (MDΔ {fmt.mdd(self.mdd_pts)})"))
        elif self.kind == SHOWN and self.outside_band is False:
            parts.append(f"{mean} is shown over tasks though inside the pair's A/A band ±{self.band_pts:.1f}")
        said = "" if parts else mean + " "  # the mean is named once per line
        if self.harmed is not None and not math.isnan(self.chance):
            if self.kind != SHOWN and self.concentrated:
                parts.append(("" if parts else f"{mean} not shown at this size; ") + self.harm_words())
            elif self.kind == SHOWN and self.direction == "better" and self.concentrated:
                parts.append(f"{said}shown better, yet {self.harm_count()}: it helps on average, and the harm "
                             "is concentrated in these tasks")
            elif self.kind == SHOWN and self.direction == "worse" and not self.concentrated:
                parts.append(f"{said}shown worse, yet only {self.harm_count()}: the loss is spread over many "
                             "tasks, not concentrated in a few")
        return "; ".join(parts) or None

    def aa_reading(self) -> str | None:
        """For a cell against itself (its halves): a line naming what lies outside noise; None when nothing does."""
        parts = [f"its halves {aa_line(self.delta_pts, self.band_pts)}"] if self.outside_band else []
        if self.concentrated:
            parts.append(f"the split lists {self.harm_words()} for identical halves")
        return "; ".join(parts) or None

    def __str__(self) -> str:  # a CSV cell: 'worse, not enough evidence'
        return f"{self.direction}, {self.kind}"


def aa_line(observed_pts: float, band_pts: float) -> str:
    """A cell's halves against each other: 'differ by X points (95% at that size: ±B): inside/outside it'."""
    where = "outside" if abs(observed_pts) > band_pts else "inside"
    return f"differ by {fmt.signed(observed_pts)} points (95% at that size: ±{band_pts:.1f}): {where} it"

