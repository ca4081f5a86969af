"""Which strategies are shown to be no more than a margin below every other: the core of `make recommend`.

"Not significantly worse" is not evidence of "as good": with few tasks every strategy is "not significantly
worse", and the cheapest one wins by default. Here a strategy `s` must *earn* its place:

* for every other strategy `j`, a one-sided paired test over tasks rejects H0: mean(m_s - m_j) <= -margin
  (m = the per-task metric being ranked: success or Pass^k), i.e. `s` is shown to be at most `margin` below `j`;
* `s` is shown against all of them at once (intersection-union: its p-value is the largest of its pairwise ones);
* across strategies the "shown" claims are Holm-corrected (with Shaffer's restriction, see `holm`), so the
  chance that any strategy truly more than `margin` below another is declared shown is at most alpha.

The paired test is a t-test made valid for bounded 0/1 outcomes (chosen by calibration, docs/deciding.md):

* **a variance floor**: on the null's boundary (mean difference -margin) the per-task difference of m 0/1 trials
  cannot vary less than margin (1 - margin) / m, whatever the tasks (`variance_floor`). Near the ceiling or the
  floor every task often differs by the same amount (zero observed spread); the plain t-test then called a
  10-point deficit "shown within 5 points" in 35 % of seeds at 10 tasks x 1 trial. The spread used is the larger
  of the observed one and the floor;
* **a continuity correction** of half a step of the mean's lattice, 1 / (2 n m): the mean of n tasks x m trials
  moves in steps of 1 / (n m), and without it the boundary was shown in up to 6.4 % of seeds (alpha 5 %);
* **a minimum of `MIN_TASKS` paired tasks**: below it nothing is shown (the caller says "No decision yet").

For Pass^k, m is the number of disjoint k-trial blocks per task (trials // k). A strategy that is better than the
rest passes too (superiority implies non-inferiority). When no strategy is shown, `tasks_for` sizes the run that
would settle it (analysis.decision, with a bootstrap range from analysis.statistics.sizing).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats as sps
from statistics import NormalDist

from analysis.statistics.stats import ALPHA, MIN_TASKS  # tables star cells under MIN_TASKS; each pair needs it

POWER = 0.80  # the power every sizing plans for (analysis.statistics.variance, analysis.decision)


@dataclass(frozen=True)
class Pair:
    """`s` against `j` on the tasks both have: diff = mean over tasks of m_s - m_j (fractions)."""

    other: str
    n: int
    diff: float
    sd: float  # the spread the test used: observed sd of the per-task difference, or the floor when larger
    lower: float  # one-sided (1 - alpha) lower confidence bound of diff
    p: float  # one-sided p of H0: diff <= -margin
    floored: bool = False  # the observed spread was below what bounded outcomes allow: the floor was used

    @property
    def too_few(self) -> bool:
        return self.n < MIN_TASKS


@dataclass(frozen=True)
class Arm:
    strategy: str
    rate: float
    pairs: tuple[Pair, ...]
    p: float  # intersection-union p: the largest pairwise p (1.0 when a pair has too few tasks)
    p_holm: float = math.nan
    shown: bool = False

    @property
    def weakest(self) -> Pair | None:
        """The comparison that decides: the one with the largest p."""
        return max(self.pairs, key=lambda q: q.p) if self.pairs else None


def variance_floor(margin: float, blocks: int = 1) -> float:
    """The least variance a per-task difference of `blocks` 0/1 trials can have when its mean is -margin.

    One trial's difference X is -1, 0 or 1, so Var(X | task) = P(X != 0) - δ_t^2 >= |δ_t|(1 - |δ_t|) (δ_t = the
    task's true difference). Over tasks, Var(d) = Var(δ_t) + E[Var(d_t | task)] >= (1 - 1/b) E[δ_t^2] + E|δ_t| / b
    - margin^2, and E[δ_t^2] >= margin^2, E|δ_t| >= margin; equality when every δ_t = -margin: margin (1 - margin)
    / b. (Alone, the within-task part can fall below it: the between-task part makes up the rest.)"""
    return margin * (1 - margin) / max(1, blocks)


def one_sided(d: np.ndarray, margin: float, alpha: float = ALPHA, blocks: int = 1):
    """The test on per-task differences `d` (last axis = tasks; leading axes = independent samples, so a
    calibration runs thousands at once): (mean, sd used, lower bound, p, floored), arrays or floats."""
    d = np.asarray(d, dtype=float)
    n = d.shape[-1]
    mean, sd = d.mean(axis=-1), d.std(axis=-1, ddof=1)
    floor = math.sqrt(variance_floor(margin, blocks))
    used = np.maximum(sd, floor)
    se = used / math.sqrt(n)
    shift = 1 / (2 * n * max(1, blocks))  # continuity: half a step of the mean's lattice
    t = float(sps.t.ppf(1 - alpha, df=n - 1))
    p = sps.t.sf((mean - shift + margin) / se, df=n - 1)
    return mean, used, mean - shift - t * se, p, sd < floor


def paired_one_sided(a: pd.Series, b: pd.Series, margin: float, alpha: float = ALPHA,
                     blocks: int = 1) -> tuple[int, float, float, float, float, bool]:
    """(n, diff, sd used, lower bound, p, floored) of H0: mean(a - b) <= -margin, paired on the shared index
    (tasks); `blocks` = 0/1 trials (Pass^k: k-trial blocks) behind each task's value."""
    both = pd.concat([a.rename("a"), b.rename("b")], axis=1, join="inner").dropna()
    d = (both["a"] - both["b"]).to_numpy(dtype=float)
    n = d.size
    if n < 2:
        return n, float(d.mean()) if n else math.nan, math.nan, -math.inf, 1.0, False
    mean, used, lower, p, floored = one_sided(d, margin, alpha, blocks)
    return n, float(mean), float(used), float(lower), float(p), bool(floored)


def holm(pvalues: dict[str, float]) -> dict[str, float]:
    """Holm step-down adjusted p-values over strategies, with Shaffer's logical restriction: the strategy with
    the best true rate is never more than a margin below another, so at most k - 1 of the k "s is worse by more
    than the margin" hypotheses can be true (divisors k-1, k-1, k-2, ..., 1). Monotone, capped at 1."""
    order = sorted(pvalues, key=lambda s: pvalues[s])
    k, running, out = len(order), 0.0, {}
    for i, s in enumerate(order):
        running = max(running, min(1.0, max(1, min(k - i, k - 1)) * pvalues[s]))
        out[s] = running
    return out


def assess(metric: dict[str, pd.Series], margin: float, alpha: float = ALPHA, blocks: int = 1) -> dict[str, Arm]:
    """metric = strategy -> per-task metric (index = task id). Returns strategy -> Arm, `shown` set. A pair on
    fewer than MIN_TASKS tasks shows nothing (p = 1)."""
    arms = {}
    for s, m in metric.items():
        pairs = []
        for j in metric:
            if j != s:
                q = Pair(j, *paired_one_sided(m, metric[j], margin, alpha, blocks))
                pairs.append(Pair(q.other, q.n, q.diff, q.sd, q.lower, 1.0, q.floored) if q.too_few else q)
        arms[s] = Arm(s, float(m.mean()), tuple(pairs), max((q.p for q in pairs), default=0.0))
    adjusted = holm({s: a.p for s, a in arms.items()})
    return {s: Arm(a.strategy, a.rate, a.pairs, a.p, adjusted[s], adjusted[s] <= alpha) for s, a in arms.items()}


def z_needed(k: int, alpha: float = ALPHA, power: float = POWER) -> float:
    """z_(1 - alpha / (k - 1)) + z_power: Holm's first step for k strategies, at the named power."""
    return NormalDist().inv_cdf(1 - alpha / max(1, k - 1)) + NormalDist().inv_cdf(power)


def tasks_for(gap, sd, z: float, margin: float, blocks: int = 1):
    """Tasks for a one-sided test to clear a true `gap` (diff + margin > 0) with spread `sd` (arrays welcome):
    the spread floored as in the test, +1 for the t statistic's extra width, at least MIN_TASKS; inf when
    gap <= 0 or sd is unknown."""
    gap, sd = np.asarray(gap, dtype=float), np.asarray(sd, dtype=float)
    sd = np.maximum(sd, math.sqrt(variance_floor(margin, blocks)))
    with np.errstate(divide="ignore", invalid="ignore"):
        need = np.where((gap > 0) & np.isfinite(sd), (z * sd / gap) ** 2 + 1, np.inf)
    return np.ceil(np.maximum(need, MIN_TASKS))
