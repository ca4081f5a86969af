"""The fixed and the sequential design replayed on records drawn from a planted truth, seed by seed: what the
calibration test (tests/test_sequential_calibration.py) and bench/sequential.py measure. No records, no pandas:
per strategy and task the mean of `trials` Bernoulli draws, the fixed decision's test on the whole pool
(analysis.statistics.noninferiority: intersection-union, Holm with Shaffer's restriction, cheapest shown) and the
sequential one wave by wave (analysis.statistics.sequential)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping

import numpy as np

from analysis.statistics import sequential
from analysis.statistics.noninferiority import holm, one_sided
from analysis.statistics.stats import ALPHA


@dataclass(frozen=True)
class Truth:
    """A planted truth: per strategy one success probability for every task or one per task of the pool;
    `strategies` cheapest first (the order a tie of qualifying strategies is broken by)."""

    name: str
    p: Mapping[str, float | tuple[float, ...]]
    pool: int
    trials: int
    margin: float = 0.05
    wave: int = 10

    @property
    def strategies(self) -> tuple[str, ...]:
        return tuple(self.p)

    def rates(self) -> dict[str, float]:
        return {s: float(np.mean(np.broadcast_to(np.asarray(p, float), (self.pool,)))) for s, p in self.p.items()}

    def wrong(self, choice: str | None) -> bool:
        """A pick at least the margin below the best planted rate (the null's boundary counts as wrong)."""
        rates = self.rates()
        return choice is not None and rates[choice] <= max(rates.values()) - self.margin + 1e-9

    def right(self, choice: str | None) -> bool:
        return choice is not None and not self.wrong(choice)

    def draw(self, seed: int) -> dict[str, np.ndarray]:
        """Per strategy the per-task mean over `trials` independent draws."""
        rng = np.random.default_rng(seed)
        return {s: rng.binomial(self.trials, np.broadcast_to(np.asarray(p, float), (self.pool,))) / self.trials
                for s, p in self.p.items()}


@dataclass(frozen=True)
class Outcome:
    choice: str | None
    episodes: int
    look: int = 0  # the sequential design's last look (0 for the fixed one)
    stop: str = "pool"


def fixed(truth: Truth, metric: Mapping[str, np.ndarray], alpha: float = ALPHA) -> Outcome:
    """`make recommend`'s decision on the whole pool: the cheapest strategy shown non-inferior to every other."""
    names = truth.strategies
    p = {}
    for s in names:
        p[s] = max(float(one_sided(metric[s] - metric[j], truth.margin, alpha, truth.trials)[3])
                   for j in names if j != s)
    adjusted = holm(p)
    shown = [s for s in names if adjusted[s] <= alpha]
    return Outcome(shown[0] if shown else None, truth.pool * truth.trials * len(names))


def run_sequential(truth: Truth, metric: Mapping[str, np.ndarray], alpha: float = ALPHA) -> Outcome:
    """Waves of `truth.wave` tasks until a look stops; episodes = what the strategies still running ran."""
    design = sequential.Design(truth.strategies, truth.pool, truth.margin, truth.trials, alpha)
    history: list[sequential.Look] = []
    episodes, running = 0, truth.strategies
    for wave in range(1, math.ceil(truth.pool / truth.wave) + 1):
        n = min(truth.pool, wave * truth.wave)
        episodes += (n - (wave - 1) * truth.wave) * truth.trials * len(running)
        look = sequential.take_look(design, history, {s: metric[s][:n] for s in running}, truth.strategies,
                                    last="pool" if n >= truth.pool else None)
        history.append(look)
        running = look.still
        if look.stop:
            return Outcome(look.choice, episodes, look.index, look.stop)
    return Outcome(None, episodes, len(history))


@dataclass(frozen=True)
class Rates:
    """One design over many seeds."""

    episodes: np.ndarray
    rights: np.ndarray  # per seed: a right decision
    wrong: int

    @property
    def right(self) -> int:
        return int(self.rights.sum())

    @property
    def seeds(self) -> int:
        return len(self.rights)

    @property
    def mean(self) -> float:
        return float(self.episodes.mean())

    @property
    def p90(self) -> float:
        return float(np.percentile(self.episodes, 90))

    def interval(self, count: int) -> tuple[float, float]:
        """A 95 % Wilson interval of count / seeds (the Monte-Carlo interval of a rate)."""
        from analysis.statistics.stats import wilson_ci

        return wilson_ci(count, self.seeds)


def replay(truth: Truth, seeds: range, alpha: float = ALPHA) -> tuple[Rates, Rates]:
    """(fixed, sequential) over `seeds`, each seed's draw shared by both designs."""
    runs: dict[str, list[Outcome]] = {"fixed": [], "sequential": []}
    for seed in seeds:
        metric = truth.draw(seed)
        runs["fixed"].append(fixed(truth, metric, alpha))
        runs["sequential"].append(run_sequential(truth, metric, alpha))
    fixed_rates, seq_rates = (Rates(np.array([o.episodes for o in out], float),
                                    np.array([truth.right(o.choice) for o in out]),
                                    sum(truth.wrong(o.choice) for o in out)) for out in runs.values())
    return fixed_rates, seq_rates


def right_gap(fixed: Rates, seq: Rates) -> tuple[float, float]:
    """(sequential - fixed right-decision rate, its one-sided 95 % upper Monte-Carlo bound), paired by seed."""
    d = seq.rights.astype(float) - fixed.rights.astype(float)
    se = float(d.std(ddof=1) / np.sqrt(len(d))) if len(d) > 1 else 0.0
    return float(d.mean()), float(d.mean() + 1.645 * se)
