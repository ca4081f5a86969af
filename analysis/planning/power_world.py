"""`make power PROFILE=strong|small`: the variances of the SIMULATED world instead of a pilot's
(harness/scripted/simulated_world.py: the planted p per task; two different deliveries draw independently, so
Var(D) = p_a(1 - p_a) + p_b(1 - p_b)), for none, full and core (the guidelines with support >= 3) on the artifact's
first LIMIT tasks. analysis.power is the pilot's version."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pandas as pd

from analysis.statistics.metrics import BASELINE
from analysis.statistics.variance import Variance, pair_row


def simulated_variance(p_a: dict[str, float], p_b: dict[str, float], trials: int) -> Variance:
    """Planted per-task p of two strategies that deliver differently (so draw independently) -> the paired
    difference's variance: one trial's difference has variance p_a(1 - p_a) + p_b(1 - p_b)."""
    a, b = np.array([p_a[t] for t in p_a]), np.array([p_b[t] for t in p_a])
    diffs = a - b
    within = float(np.mean(a * (1 - a) + b * (1 - b)))
    tau2 = float(diffs.var(ddof=0))
    return Variance(len(diffs), trials, float(diffs.mean()), tau2, within)


# the arms the simulated world's power is predicted for: every guideline, and ALTK-Evolve's core (support >= 3)
ARMS: dict[str, Callable[[list[Any]], list[Any]]] = {
    "full": lambda guidelines: guidelines,
    "core": lambda guidelines: [g for g in guidelines if g.support >= 3],
}


def simulated_ps(profile: str, artifact: str, limit: int) -> dict[str, dict[str, float]]:
    """strategy (none, full, core) -> task id -> planted p, for the artifact's first `limit` tasks."""
    from harness.scripted import simulated_world as world
    from strategies import render_guidelines
    from memory_kit.memory_file import load_memory

    prof, w = world.profile(profile), world.load_world(artifact)  # WorldError before anything else
    guidelines, meta = load_memory(artifact)
    tasks = meta["simulated"]["tasks"][:limit]
    blocks = {BASELINE: "", **{arm: render_guidelines(keep(guidelines)) for arm, keep in ARMS.items()}}
    return {s: {t: world.expected_p(prof, w, t, b) for t in tasks} for s, b in blocks.items()}


def simulated_table(profile: str, artifact: str, limit: int, trials: int, delta_pts: float) -> pd.DataFrame:
    ps = simulated_ps(profile, artifact, limit)
    rows = []
    for strategy in ARMS:
        v = simulated_variance(ps[strategy], ps[BASELINE], trials)
        rows.append({"model": f"memdeliv-simulated/{profile}", "strategy": strategy, "tasks": v.n,
                     "trials": trials, **pair_row(v, delta_pts), "predicted_power": v.power()})
    return pd.DataFrame(rows)
