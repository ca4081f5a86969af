"""Statistics single runs lack: bootstrap CIs over tasks and paired tests between strategies.

The unit of resampling is the task (its trials stay together), because tasks, not trials, are what a
benchmark samples. All resampling uses a fixed seed so a table is the same every time it is rebuilt.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

N_BOOT = 2000
ALPHA = 0.05
MIN_TASKS = 20  # below this a cell's CI is too wide to rank strategies on; tables flag it
SEED = 0


def bootstrap_ci(values, n_boot: int = N_BOOT, alpha: float = ALPHA, seed: int = SEED) -> tuple[float, float]:
    """Percentile bootstrap CI of the mean of per-task values; (nan, nan) when there are none."""
    x = np.asarray(pd.Series(values).dropna(), dtype=float)
    if x.size == 0:
        return float("nan"), float("nan")
    if x.size == 1 or np.all(x == x[0]):
        return float(x[0]), float(x[0])
    rng = np.random.default_rng(seed)
    means = x[rng.integers(0, x.size, size=(n_boot, x.size))].mean(axis=1)
    lo, hi = np.quantile(means, [alpha / 2, 1 - alpha / 2])
    return float(lo), float(hi)


def wilson_ci(successes: int, n: int, alpha: float = ALPHA) -> tuple[float, float]:
    """Wilson score interval of a binomial rate: honest for a few trials, where a bootstrap collapses to [1, 1]
    after an all-success run."""
    if n == 0:
        return float("nan"), float("nan")
    from scipy.stats import norm

    z = float(norm.ppf(1 - alpha / 2))
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def mcnemar_exact(a_only: int, b_only: int) -> float:
    """Two-sided exact McNemar p-value from the discordant pairs (binomial, p = 1/2)."""
    n = a_only + b_only
    if n == 0:
        return 1.0
    k = min(a_only, b_only)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n
    return min(1.0, 2 * tail)


def sign_flip_p(diffs, n_perm: int = N_BOOT, seed: int = SEED) -> float:
    """Two-sided paired permutation p-value: flip the sign of each task's difference at random."""
    d = np.asarray(diffs, dtype=float)
    if d.size == 0 or np.all(d == 0):
        return 1.0
    rng = np.random.default_rng(seed)
    observed = abs(d.mean())
    flips = rng.choice([-1.0, 1.0], size=(n_perm, d.size))
    extreme = (np.abs((flips * d).mean(axis=1)) >= observed - 1e-12).sum()
    return float((extreme + 1) / (n_perm + 1))


@dataclass(frozen=True)
class PairedResult:
    n: int            # tasks both strategies ran (infra errors excluded)
    rate_a: float
    rate_b: float
    diff: float       # rate_a - rate_b
    lo: float         # paired bootstrap CI of the difference
    hi: float
    p: float
    test: str         # "mcnemar" (one trial, binary outcomes) or "sign-flip" (per-task means over trials)

    @property
    def few_tasks(self) -> bool:
        return self.n < MIN_TASKS


def paired(a: pd.Series, b: pd.Series, n_boot: int = N_BOOT, seed: int = SEED) -> PairedResult:
    """Compare two strategies on the tasks both ran; `a`, `b` = per-task success (index = task id)."""
    both = pd.concat([a.rename("a"), b.rename("b")], axis=1, join="inner").dropna()
    n = len(both)
    if n == 0:
        nan = float("nan")
        return PairedResult(0, nan, nan, nan, nan, nan, nan, "none")
    d = (both["a"] - both["b"]).to_numpy(dtype=float)
    lo, hi = bootstrap_ci(d, n_boot=n_boot, seed=seed)
    binary = both.isin([0.0, 1.0]).all().all()
    if binary:
        p, test = mcnemar_exact(int(((both["a"] == 1) & (both["b"] == 0)).sum()),
                                int(((both["a"] == 0) & (both["b"] == 1)).sum())), "mcnemar"
    else:
        p, test = sign_flip_p(d, n_perm=n_boot, seed=seed), "sign-flip"
    return PairedResult(n, float(both["a"].mean()), float(both["b"].mean()), float(d.mean()), lo, hi, p, test)
