"""The paired difference's variance between two strategies, split into a between-task and a trial part, and what
it implies: the minimum detectable Δ, the power of the analysis's paired test, and the tasks a Δ needs (with its
bootstrap range over the pilot's tasks). analysis.power prints it for pilot runs, analysis.planning.power_world for the
simulated world; the formulas are explained in analysis.power's docstring."""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import overload

import numpy as np
import pandas as pd

from analysis.statistics import sizing, stats
from analysis.statistics.noninferiority import POWER, variance_floor
from analysis.statistics.verdict import UNDERPOWERED, Verdict

TRIAL_GRID = (1, 2, 4, 8)


def critical(n: int, alpha: float = stats.ALPHA) -> float:
    """Two-sided critical value of the paired t statistic over n tasks (Cornish-Fisher t from z)."""
    z = NormalDist().inv_cdf(1 - alpha / 2)
    return z + (z ** 3 + z) / (4 * max(1, n - 1))


@dataclass(frozen=True)
class Variance:
    """The paired difference's variance, split into a between-task and a within-task (trial) part.

    The paired test's standard error over n tasks is sqrt((tau2 + within/m) / n). Rerunning the *same*
    tasks (a new seed), the observed Δ moves only by trial noise, sqrt(within / (m n)); so power on these
    tasks is P(|Δ̂| > critical x se_test) with Δ̂ ~ N(Δ, se_rerun). When the parts could not be split
    (one trial), se_rerun = se_test: the textbook, conservative case."""

    n: int  # tasks
    m: int  # trials
    delta: float  # observed (or planted) mean difference, as a fraction
    tau2: float  # between-task variance of the true per-task difference
    within: float  # variance of one trial's difference within a task
    split: bool = True  # False: one trial, tau2 holds all the variance

    def var_d(self, trials: int | None = None) -> float:
        return self.tau2 + self.within / (trials or self.m)

    def _se(self, n: int, trials: int, delta: float = 0.0) -> tuple[float, float]:
        """(test, rerun) standard errors. The analysis's sign-flip test scales by the uncentred second moment
        of the per-task differences, so its null spread grows with Δ^2; rerunning these same tasks, the
        observed Δ moves only by trial noise (new tasks: new_task_power)."""
        test = math.sqrt((self.var_d(trials) + delta ** 2) / n)
        if not self.split:
            return test, math.sqrt(self.var_d(trials) / n)
        return test, math.sqrt(self.within / (trials * n))

    def _detectable(self, n: int, trials: int, alpha: float, power: float) -> float:
        """Fixed point of Δ = critical x se_test(Δ) + z_power x se_Δ; inf when there is none below 100 points
        (too few tasks: the test's spread grows with Δ as fast as Δ does)."""
        c = critical(n, alpha)
        if c * c >= n:
            return math.inf
        delta = 0.0
        for _ in range(200):
            test, spread = self._se(n, trials, delta)
            new = c * test + NormalDist().inv_cdf(power) * spread
            if abs(new - delta) < 1e-9:
                break
            delta = new
        return delta if delta <= 1.0 else math.inf

    def mdd(self, alpha: float = stats.ALPHA, power: float = POWER) -> float:
        """Minimum detectable |Δ| (fraction) rerunning these tasks x trials; inf: too few tasks to estimate."""
        return self._detectable(self.n, self.m, alpha, power) if self.n else float("nan")

    def new_task_power(self, n: int, trials: int, delta: float, alpha: float = stats.ALPHA) -> float:
        """Power of the analysis's paired test (sign-flip; McNemar at one trial) on n NEW tasks. Its statistic
        is mean(d) / sqrt(mean(d^2) / n), about t-distributed under the null, so it rejects when
        |mean(d)| > c sqrt(v / (n - c^2)) (v = the per-task difference's variance, c = `critical`; + 1/n at one
        trial, the exact McNemar test's discreteness), while mean(d) ~ N(Δ, v / n) across new task samples."""
        c, v = critical(n, alpha), self.var_d(trials)
        if n <= c * c or v <= 0:
            return float(n > c * c and abs(delta) > 0)
        cut = c * math.sqrt(v / (n - c * c)) + (1 / n if trials == 1 else 0.0)
        spread = math.sqrt(v / n)
        return NormalDist().cdf((abs(delta) - cut) / spread) + NormalDist().cdf((-abs(delta) - cut) / spread)

    def tasks_needed(self, delta: float, trials: int | None = None, alpha: float = stats.ALPHA,
                     power: float = POWER) -> int:
        """NEW tasks (drawn like these) for `delta` (fraction) at `trials` trials per task: the between-task
        spread of the difference counts, not only trial noise."""
        trials = trials or self.m
        floor = variance_floor(abs(delta), trials)  # a true Δ between 0/1 outcomes never varies less
        v = self if self.var_d(trials) >= floor else Variance(self.n, trials, self.delta, floor, 0.0)

        def enough(n: int) -> bool:
            return v.new_task_power(n, trials, delta, alpha) >= power

        hi = 4
        while not enough(hi) and hi < 10_000_000:  # power rises with tasks: double, then bisect
            hi *= 2
        lo = max(4, hi // 2)
        while lo < hi:
            mid = (lo + hi) // 2
            lo, hi = (lo, mid) if enough(mid) else (mid + 1, hi)
        return hi

    def power(self, delta: float | None = None, alpha: float = stats.ALPHA, new_tasks: bool = False) -> float:
        """Predicted power of the paired test for `delta` (default: the observed / planted one), rerunning
        these tasks or (new_tasks) on as many new ones."""
        delta = abs(self.delta if delta is None else delta)
        if new_tasks:
            return self.new_task_power(self.n, self.m, delta, alpha)
        test, spread = self._se(self.n, self.m, delta)
        cut = critical(self.n, alpha) * test
        if spread == 0:
            return 1.0 if delta > cut else 0.0
        return NormalDist().cdf((delta - cut) / spread) + NormalDist().cdf((-delta - cut) / spread)


def pair_variance(a: pd.DataFrame, b: pd.DataFrame) -> Variance:
    """From the records of two strategies on the same tasks (infra errors already removed)."""
    return variance_of(sizing.parts(a, b))


@overload
def variance_of(p: sizing.Parts, idx: None = None) -> Variance: ...
@overload
def variance_of(p: sizing.Parts, idx: np.ndarray) -> list[Variance]: ...
def variance_of(p: sizing.Parts, idx: np.ndarray | None = None) -> Variance | list[Variance]:
    """The Variance of a pair's per-task parts; with `idx` (sizing.resample), one per bootstrap draw (a pair
    with no tasks: the one empty Variance either way; callers draw only when there are tasks)."""
    if not p.n:
        return Variance(0, 0, float("nan"), float("nan"), float("nan"))
    out = [Variance(p.n, p.m, float(d), max(0.0, float(v) - float(w) / p.m) if p.m >= 2 else float(v),
                    float(w) if p.m >= 2 else 0.0, split=p.m >= 2) for d, v, w in zip(*sizing.moments(p, idx))]
    return out if idx is not None else out[0]


def pair_row(v: Variance, delta_pts: float, alpha: float = stats.ALPHA, verdict: Verdict | None = None,
             p: float = float("nan")) -> dict:
    """MDΔ, the flag (analysis.statistics.verdict's rule; with no measured verdict, on the test's p when known, and a Δ
    below MDΔ), tasks@T."""
    mdd = 100 * v.mdd(alpha)  # inf: too few tasks to estimate
    verdict = verdict or Verdict(100 * v.delta, p, mdd, alpha=alpha)
    row = {"paired": f"{v.n}×{v.m}", "Δ_pts": 100 * v.delta, "p": verdict.p, "MDΔ_pts": mdd,
           "underpowered": bool(v.n) and verdict.kind == UNDERPOWERED,
           "sd_d": math.sqrt(v.var_d()), "tau2": v.tau2, "within": v.within}
    for t in TRIAL_GRID:
        if not v.split and t != v.m:
            row[f"tasks@{t}"] = None  # cannot say how trials would help
        else:
            row[f"tasks@{t}"] = v.tasks_needed(delta_pts / 100, t, alpha)
    return row


def task_ranges(p: sizing.Parts, delta_pts: float, alpha: float = stats.ALPHA) -> dict:
    """`tasks@T range`: (lo, hi) of tasks@T over a bootstrap of the pilot's tasks."""
    draws = variance_of(p, sizing.resample(p.n, n_boot=200))
    out = {}
    for t in TRIAL_GRID:
        if p.m >= 2 or t == p.m:
            out[f"tasks@{t} range"] = sizing.span([v.tasks_needed(delta_pts / 100, t, alpha) for v in draws])
    return out


