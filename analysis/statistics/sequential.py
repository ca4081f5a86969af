"""The sequential non-inferiority decision: `make recommend`'s question asked after every wave of a sweep, with a
boundary that keeps the chance of a wrong recommendation <= alpha however many looks are taken.

The design (docs/deciding.md "Stopping early"): a **group-sequential design with Lan-DeMets alpha spending of the
O'Brien-Fleming type** (Lan & DeMets, Biometrika 1983; Jennison & Turnbull, *Group Sequential Methods*, 2000,
ch. 7), applied to the same paired one-sided test as the fixed decision (analysis.statistics.noninferiority: the
t-test on per-task differences with the 0/1 variance floor and the continuity correction). At look k, with
n_k paired tasks of a pool of N (information fraction t_k = n_k / N), a comparison is shown when its one-sided
p is at most the look's nominal level, the level whose boundary spends alpha(t_k) - alpha(t_k-1) given that no
earlier look crossed (the boundary is computed exactly for a Brownian motion, by numerical integration over
the looks taken). O'Brien-Fleming-type spending spends almost nothing early, so the last look's level is close
to the fixed test's: the decision at the full pool loses little against the fixed design.

* **Across strategies**: the group-sequential Holm procedure (Ye, Li, Jiang & Wang, Stat. Med. 2013; Maurer &
  Bretz, Stat. Biopharm. Res. 2013): strategy s's claim "at most DELTA below every other still running" is shown
  by look k at level a when every pair (s, j) crossed its level-a boundary at some look <= k
  (intersection-union); Holm's step-down with Shaffer's restriction (divisors K-1, K-1, K-2, ..., 1 over the K
  strategies the sweep started with; a dropped strategy counts as never shown) decides which are shown.
* **Dropping**: j is dropped when some running i is shown more than DELTA above it, by the same kind of
  boundary at level alpha_drop / (K - 1) per pair (alpha_drop = DROP_SHARE x alpha), spent Pocock-style
  (alpha_drop log(1 + (e - 1) t): evenly, so a clearly worse strategy stops early). A wrong pick needs either a
  wrong NI claim against the truly best strategy (at most alpha - alpha_drop over all looks) or the best strategy
  dropped (at most alpha_drop), so the whole sequence's chance of a wrong recommendation is at most alpha. With
  two strategies a drop is a shown claim already (i more than DELTA above j is i non-inferior to j), so all of
  alpha goes to the shown family.
* **Futility**: when even the strategy closest to qualifying would need more tasks than the pool holds at 80 %
  power (noninferiority.tasks_for, the fixed decision's sizing), at differences as favourable as their upper
  90 % bounds, the sweep stops: "No decision: ...". (Sized at the observed differences, even stopping only
  beyond twice the pool, it cost up to 16 points of right decisions against the fixed design, and at their 80 %
  bounds up to 10; at the 90 % bounds at most 3: 200 seeds of bench/sequential.py's cases.)
* **The pool spent**: the last look spends all that is left of alpha: the decision at that size, labelled.
  **The budget spent**: that look spends what its size allows (alpha(t)), like any other, so a rerun with a
  higher budget goes on at the next wave and alpha still holds over every look.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache
from statistics import NormalDist
from typing import Mapping, Sequence

import numpy as np
from scipy import optimize
from scipy.stats import norm

from analysis.statistics.noninferiority import one_sided, tasks_for, z_needed
from analysis.statistics.stats import ALPHA, MIN_TASKS

DROP_SHARE = 0.2  # of alpha, for dropping: a wrong drop of the best strategy is the other road to a wrong pick
FUTILITY = 1.0  # stop for futility when the least tasks that would settle it exceed this many pools ...
OPTIMISM = 1.28  # ... even at a difference this many standard errors more favourable than observed (90 % bound)
DROP_SPENDING = "pocock"  # a clearly worse strategy stops early: that is where the saving is (bench/sequential.py)
BOUNDARY = "Lan-DeMets O'Brien-Fleming-type alpha spending"
_STEP = 0.01
_GRID = np.arange(-8.0, 8.0, _STEP)  # the Brownian motion's values, for the exact crossing probabilities


def spent(t: float, alpha: float, kind: str = "obf") -> float:
    """O'Brien-Fleming type (`obf`): alpha(t) = 2 - 2 Phi(z_(1 - alpha/2) / sqrt(t)), spends little early; Pocock
    type (`pocock`): alpha log(1 + (e - 1) t), spends evenly. alpha(1) = alpha for both."""
    if t <= 0:
        return 0.0
    t = min(t, 1.0)
    if kind == "pocock":
        return float(alpha * math.log(1 + (math.e - 1) * t))
    return float(min(alpha, 2 - 2 * norm.cdf(NormalDist().inv_cdf(1 - alpha / 2) / math.sqrt(t))))


def _crossing(weights: np.ndarray | None, dt: float, b: float) -> float:
    """P(B(t) >= b, no earlier crossing): `weights` = the surviving density x grid step at the last look (None:
    the first look, from B(0) = 0), dt = t - the last look's t."""
    if weights is None:
        return float(norm.sf(b / math.sqrt(dt)))
    return float(weights @ norm.sf((b - _GRID) / math.sqrt(dt)))


@lru_cache(maxsize=4096)
def nominal_levels(fractions: tuple[float, ...], alpha: float, final: bool = False,
                   kind: str = "obf") -> tuple[float, ...]:
    """Per look, the one-sided nominal level a comparison's p must reach, so that the chance of any crossing by
    look k is alpha(t_k) (the last one spends all of alpha when `final`). Exact for independent increments: the
    density of B(t) among paths that have not crossed is carried on a grid from look to look."""
    levels: list[float] = []
    weights: np.ndarray | None = None
    prev_t, prev_spent = 0.0, 0.0
    for k, t in enumerate(fractions):
        target = alpha if (final and k == len(fractions) - 1) else spent(t, alpha, kind)
        step, dt = max(0.0, target - prev_spent), t - prev_t
        b = math.inf
        if step > 1e-12:
            b = optimize.brentq(lambda x, w=weights, d=dt, s=step: _crossing(w, d, x) - s, -8.0, 40.0, xtol=1e-10)
            prev_spent += _crossing(weights, dt, b)
        levels.append(float(norm.sf(b / math.sqrt(t))) if math.isfinite(b) else 0.0)
        if weights is None:
            carried = norm.pdf(_GRID / math.sqrt(dt)) / math.sqrt(dt)
        else:
            carried = norm.pdf((_GRID[:, None] - _GRID[None, :]) / math.sqrt(dt)) @ weights / math.sqrt(dt)
        weights = np.where(_GRID < b, carried, 0.0) * _STEP
        prev_t = t
    return tuple(levels)


@dataclass(frozen=True)
class Design:
    """What the sweep fixes before its first look."""

    strategies: tuple[str, ...]  # every strategy the sweep started with
    pool: int  # tasks in the pool: the maximum size, t = tasks / pool
    margin: float  # DELTA as a fraction
    blocks: int = 1  # 0/1 trials behind each task's value (trials, or trials // k for Pass^k)
    alpha: float = ALPHA

    @property
    def alpha_drop(self) -> float:
        return self.alpha * DROP_SHARE if len(self.strategies) > 2 else 0.0

    @property
    def alpha_shown(self) -> float:
        return self.alpha - self.alpha_drop

    @property
    def alpha_dropping(self) -> float:
        """Per pair. With two strategies a drop needs no share of its own: i shown more than DELTA above j is i
        shown non-inferior to j at the same level, a claim of the shown family already."""
        if len(self.strategies) == 2:
            return self.alpha_shown
        return self.alpha_drop / max(1, len(self.strategies) - 1)

    def divisors(self) -> tuple[int, ...]:
        """Holm's step-down divisors with Shaffer's restriction over the K strategies."""
        k = len(self.strategies)
        return tuple(max(1, min(k - i, k - 1)) for i in range(k))


@dataclass(frozen=True)
class Comparison:
    """One pair at one look, as looks.jsonl keeps it: `strategy` minus `other`, paired over `n` tasks."""

    strategy: str
    other: str
    n: int
    diff: float
    sd: float  # the spread the test used (the floor when the observed one is below it)
    lower: float  # the fixed test's 95 % lower bound, for reading (the boundary decides, not this)
    p: float  # one-sided p of H0: diff <= -margin


@dataclass(frozen=True)
class Look:
    index: int  # 1, 2, ...
    tasks: int  # paired tasks so far
    running: tuple[str, ...]  # strategies that ran this wave
    comparisons: tuple[Comparison, ...] = ()
    level: float = 0.0  # this look's nominal level at the first Holm step (0: no test, too few tasks)
    crossed: tuple[tuple[str, str, int], ...] = ()  # (s, j, Holm divisor): pair crossed its boundary by now
    dropped: dict[str, str] = field(default_factory=dict)  # strategy -> the one shown more than DELTA above it
    shown: tuple[str, ...] = ()  # shown non-inferior to every other still running
    stop: str | None = None  # decided | futile | pool | budget | None (go on)
    choice: str | None = None
    need: int | None = None  # with futility: the least tasks that would settle it

    @property
    def still(self) -> tuple[str, ...]:
        return tuple(s for s in self.running if s not in self.dropped)


def take_look(design: Design, history: Sequence[Look], metric: Mapping[str, np.ndarray], price_order: Sequence[str],
              last: str | None = None) -> Look:
    """The look after a wave: `metric` = running strategy -> per-task metric on the tasks all of them ran (same
    order); `history` the earlier looks; `price_order` the strategies cheapest first; `last` = "pool" when no
    further wave can run (all of alpha is spent here), "budget" when the budget stopped this wave (a look like any
    other: the sweep stops, and a rerun with a higher budget goes on at the next wave)."""
    running = tuple(s for s in (history[-1].still if history else design.strategies) if s in metric)
    n = len(next(iter(metric.values()))) if metric else 0
    index = len(history) + 1
    tested = [h.tasks for h in history if h.comparisons]
    if n < MIN_TASKS or (tested and n <= tested[-1]):  # too few tasks, or none new (a budget stopped the wave)
        return Look(index, n, running, crossed=history[-1].crossed if history else (), stop=last)
    tested.append(n)
    fractions = tuple(min(1.0, x / design.pool) for x in tested)
    final = last == "pool" or n >= design.pool  # a budget's stop is a look like the others: a rerun goes on
    comparisons, crossed = [], set(history[-1].crossed if history else ())
    dropped: dict[str, str] = {}
    drop_kind = "obf" if len(design.strategies) == 2 else DROP_SPENDING  # two: a drop is a shown claim
    drop_level = nominal_levels(fractions, design.alpha_dropping, final, drop_kind)[-1]
    levels = {d: nominal_levels(fractions, design.alpha_shown / d, final)[-1] for d in set(design.divisors())}
    for s in running:
        for j in running:
            if s == j:
                continue
            d = np.asarray(metric[s], float) - np.asarray(metric[j], float)
            _, sd, lower, p, _ = one_sided(d, design.margin, design.alpha, design.blocks)
            comparisons.append(Comparison(s, j, n, float(d.mean()), float(sd), float(lower), float(p)))
            crossed |= {(s, j, div) for div, level in levels.items() if p <= level}
            # j more than DELTA below s: H0 mean(s - j) <= margin, the same test shifted by twice the margin
            if float(one_sided(d - 2 * design.margin, design.margin, design.alpha,
                                                     design.blocks)[3]) <= drop_level:
                dropped.setdefault(j, s)
    still = [s for s in running if s not in dropped]
    shown = _holm(design, still, crossed)
    look = Look(index, n, running, tuple(comparisons), levels[design.divisors()[0]], tuple(sorted(crossed)),
                dropped, tuple(shown))
    if shown:
        choice = min(shown, key=lambda s: list(price_order).index(s) if s in price_order else len(price_order))
        return _with(look, stop="decided", choice=choice)
    if final or last == "budget":
        return _with(look, stop=last or "pool")
    need = _least_tasks(design, still, comparisons)
    if need > FUTILITY * design.pool:
        return _with(look, stop="futile", need=int(need) if math.isfinite(need) else None)
    return look


def _holm(design: Design, still: Sequence[str], crossed: set) -> list[str]:
    """Group-sequential Holm: the strategies whose every pair against the others still running crossed the
    boundary at the step's level (a strategy alone is shown: nothing is left to be below)."""
    shown: list[str] = []
    divisors = design.divisors()
    while len(shown) < len(still):
        div = divisors[len(shown)]
        new = [s for s in still if s not in shown and all((s, j, div) in crossed for j in still if j != s)]
        if not new:
            break
        shown += new
    return shown


def _least_tasks(design: Design, still: Sequence[str], comparisons: Sequence[Comparison]) -> float:
    """The fewest tasks at which some running strategy would be shown at 80 % power, if the observed
    differences hold (the fixed decision's sizing)."""
    z = z_needed(len(design.strategies), design.alpha_shown)
    best = math.inf
    for s in still:
        pairs = [c for c in comparisons if c.strategy == s and c.other in still]
        if not pairs:
            continue
        need = 0.0
        for c in pairs:
            hopeful = c.diff + OPTIMISM * c.sd / math.sqrt(c.n)  # as favourable as the data readily allow
            need = max(need, float(tasks_for(hopeful + design.margin, c.sd, z, design.margin, design.blocks)))
        best = min(best, need)
    return best


def _with(look: Look, **changes) -> Look:
    from dataclasses import replace

    return replace(look, **changes)
