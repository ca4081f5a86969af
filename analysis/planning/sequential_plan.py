"""`make plan ... UNTIL=decided`: the expected and the maximum cost of a sequential sweep beside the fixed one.

The maximum is the fixed sweep: the pool is the most a sequential sweep runs. The expected share of it comes from
replaying the sequential design (analysis.statistics.sequential) on the pilot's per-task success rates taken as
the truth (the pilot's tasks repeated to fill the pool; every strategy planned must be in the pilot), over
SEEDS draws; without a pilot, the range bench/sequential.py measured."""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.statistics.sequential_replay import Truth, replay

SEEDS = 200
MEASURED = (0.5, 0.9)  # bench/sequential.py's mean share of the fixed episodes: clear answers .. no answer


def lines(strategies: list[str], pool: int, trials: int, wave: int, delta: float, episodes: int, usd: float,
          pilot: pd.DataFrame | None) -> list[str]:
    money = f"${usd:,.2f}" if usd == usd else "n/a"
    out = [f"UNTIL=decided (waves of {wave} tasks, margin {delta:g} points): at most the fixed sweep above, "
           f"{episodes} episodes, {money} (the pool of {pool} tasks is the most it runs)"]
    rates = None if pilot is None else pilot.groupby(["strategy", "task_id"])["success"].mean()
    have = set() if rates is None else set(rates.index.get_level_values(0))
    if rates is None or not set(strategies) <= have:
        why = "without PILOT=" if rates is None else "the pilot lacks " + ", ".join(sorted(set(strategies) - have))
        lo, hi = MEASURED
        return out + [f"  expected: {lo:g}-{hi:g} of it ({why}; bench/sequential.py: about {lo:g} when the answer "
                      f"is clear, {hi:g} when no strategy can be shown)"]
    p = {s: tuple(np.resize(rates[s].to_numpy(dtype=float), pool)) for s in strategies}
    fixed, seq = replay(Truth("pilot", p, pool, trials, delta / 100, wave), range(SEEDS))
    share = seq.mean / fixed.mean
    return out + [f"  expected: {share:.2f} of it, about {seq.mean:,.0f} episodes, "
                  + (f"${share * usd:,.2f}" if usd == usd else "n/a")
                  + f" (90th percentile {seq.p90:,.0f} episodes): the sequential design replayed {SEEDS} times on "
                  f"the pilot's per-task success rates as the truth"]
