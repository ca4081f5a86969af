"""Which strategies are shown to be no more than a margin below every other: the core of `make recommend`.

"Not significantly worse" is not evidence of "as good": with few tasks every strategy is "not significantly
worse", and the cheapest one wins by default. Here a strategy `s` must *earn* its place:

* for every other strategy `j`, a one-sided paired t-test over tasks rejects H0: mean(m_s - m_j) <= -margin
  (m = the per-task metric being ranked: success or Pass^k), i.e. `s` is shown to be at most `margin` below `j`;
* `s` is shown against all of them at once (intersection-union: its p-value is the largest of its pairwise ones);
* across strategies the "shown" claims are Holm-corrected (with Shaffer's restriction, see `holm`), so the
  chance that any strategy truly more than `margin` below another is declared shown is at most alpha.

A strategy that is better than the rest passes too (superiority implies non-inferiority). When no strategy is
shown, the caller says "no decision yet" and `tasks_to_show` tells how many tasks would settle it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd
from scipy import stats as sps
from statistics import NormalDist

ALPHA = 0.05
POWER = 0.80


@dataclass(frozen=True)
class Pair:
    """`s` against `j` on the tasks both have: diff = mean over tasks of m_s - m_j (fractions)."""

    other: str
    n: int
    diff: float
    sd: float  # standard deviation over tasks of the per-task difference
    lower: float  # one-sided (1 - alpha) lower confidence bound of diff
    p: float  # one-sided p of H0: diff <= -margin


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


def paired_one_sided(a: pd.Series, b: pd.Series, margin: float, alpha: float = ALPHA) -> tuple[int, float, float,
                                                                                                  float, float]:
    """(n, diff, sd, lower bound, p) of H0: mean(a - b) <= -margin, paired on the shared index (tasks)."""
    both = pd.concat([a.rename("a"), b.rename("b")], axis=1, join="inner").dropna()
    d = (both["a"] - both["b"]).to_numpy(dtype=float)
    n = d.size
    if n < 2:
        return n, float(d.mean()) if n else math.nan, math.nan, -math.inf, 1.0
    mean, sd = float(d.mean()), float(d.std(ddof=1))
    if sd == 0:  # every task differs by the same amount: the bound is that amount
        return n, mean, 0.0, mean, 0.0 if mean > -margin else 1.0
    se = sd / math.sqrt(n)
    p = float(sps.t.sf((mean + margin) / se, df=n - 1))
    lower = mean - float(sps.t.ppf(1 - alpha, df=n - 1)) * se
    return n, mean, sd, lower, p


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


def assess(metric: dict[str, pd.Series], margin: float, alpha: float = ALPHA) -> dict[str, Arm]:
    """metric = strategy -> per-task metric (index = task id). Returns strategy -> Arm, `shown` set."""
    arms = {}
    for s, m in metric.items():
        pairs = tuple(Pair(j, *paired_one_sided(m, metric[j], margin, alpha)) for j in metric if j != s)
        arms[s] = Arm(s, float(m.mean()), pairs, max((q.p for q in pairs), default=0.0))
    adjusted = holm({s: a.p for s, a in arms.items()})
    return {s: Arm(a.strategy, a.rate, a.pairs, a.p, adjusted[s], adjusted[s] <= alpha) for s, a in arms.items()}


def tasks_to_show(arm: Arm, margin: float, k: int, sd_at: dict[str, float] | None = None, alpha: float = ALPHA,
                  power: float = POWER) -> float:
    """New tasks needed for `arm` to be shown against every other with `power`, if the observed differences
    are the truth (Holm's first step: level alpha / (k - 1) for k strategies). `sd_at` overrides a pair's sd (the sd
    of the per-task difference at another number of trials). inf when an observed difference is <= -margin."""
    z = NormalDist().inv_cdf(1 - alpha / max(1, k - 1)) + NormalDist().inv_cdf(power)
    need = 0.0
    for q in arm.pairs:
        gap = q.diff + margin
        sd = (sd_at or {}).get(q.other, q.sd)
        if not gap > 0 or math.isnan(sd):
            return math.inf
        need = max(need, (z * sd / gap) ** 2 + 1)  # +1: the t statistic's extra width at small n
    return float(math.ceil(max(need, 2)))

