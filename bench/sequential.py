"""The fixed and the sequential decision side by side on planted truths (docs/deciding.md "Stopping early").

`.venv/bin/python bench/sequential.py [--seeds 200]`: per case, over the same draws (seeds 1000, 1001, ...), the
mean and 90th-percentile episodes, the wrong-pick rate (a strategy at least DELTA below the best planted rate
recommended; 95 % Wilson interval) and the right-decision rate (a strategy within DELTA recommended) of both
designs, and the ratio of mean episodes. The target: mean episodes <= 0.6 x the fixed design's on the clear
cases (the simulated strong and small profiles, a mid-range clear winner), wrong picks <= alpha everywhere.
The simulated cases read the simulated world's artifact (`make simulated-memory`); without it they are skipped.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from analysis.statistics.sequential_replay import Rates, Truth, replay, right_gap
from analysis.statistics.sequential import BOUNDARY
from analysis.statistics.stats import ALPHA

ARTIFACT = Path("runs/memory/simulated/memory.jsonl")
POOL, TRIALS = 40, 4


def cases() -> list[tuple[Truth, bool]]:
    """(truth, clear): the edges of docs/deciding.md's calibration, with 2 and 4 strategies, 1 and 4 trials."""
    four = {"none": 0.50, "core_retrieval": 0.55, "ace": 0.60, "full": 0.75}
    return [(Truth("ceiling 90/100, 2x1", {"none": 0.9, "full": 1.0}, POOL, 1), False),
            (Truth("ceiling 90/100, 2x4", {"none": 0.9, "full": 1.0}, POOL, TRIALS), False),
            (Truth("floor 0/10, 2x4", {"none": 0.0, "full": 0.1}, POOL, TRIALS), False),
            (Truth("at the margin 60/65, 2x4", {"none": 0.60, "full": 0.65}, POOL, TRIALS), False),
            (Truth("at the margin, 4x1", {"none": 0.60, "core_retrieval": 0.60, "ace": 0.60, "full": 0.65},
                   POOL, 1), False),
            (Truth("equal 50/50, 2x4", {"none": 0.5, "full": 0.5}, POOL, TRIALS), False),
            (Truth("equal 50/50, 4x4, DELTA 15", {s: 0.5 for s in four}, POOL, TRIALS, margin=0.15), False),
            (Truth("mid-range clear 50/70, 2x4", {"none": 0.5, "full": 0.7}, POOL, TRIALS), True),
            (Truth("mid-range clear 50/70, 2x1", {"none": 0.5, "full": 0.7}, POOL, 1), False),
            (Truth("mid-range clear, 4x4", four, POOL, TRIALS), False),
            *simulated()]


def simulated() -> list[tuple[Truth, bool]]:
    """The simulated world's planted per-task rates on its first 40 tasks (docs/simulated-world.md): `core` is the
    guidelines with support >= 3, as `make power PROFILE=` plans them."""
    if not ARTIFACT.is_file():
        print(f"(no {ARTIFACT}: the simulated cases are skipped; `make simulated-memory` builds it)")
        return []
    from analysis.planning.power_world import simulated_ps

    out = []
    for name, arms in (("strong", ("none", "core", "full")), ("small", ("none", "full"))):
        ps = simulated_ps(name, str(ARTIFACT), POOL)
        out.append((Truth(f"simulated {name}, {len(arms)}x4", {s: tuple(ps[s].values()) for s in arms}, POOL, TRIALS),
                    True))
    return out


def line(truth: Truth, name: str, r: Rates) -> str:
    lo, hi = r.interval(r.wrong)
    return (f"  {name:<10} episodes mean {r.mean:6.1f}, p90 {r.p90:4.0f}; wrong pick {r.wrong / r.seeds:6.1%} "
            f"[{lo:.1%}-{hi:.1%}]; right decision {r.right / r.seeds:6.1%}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=200)
    args = parser.parse_args(argv)
    if args.seeds < 1:
        parser.error("--seeds must be >= 1")
    seeds = range(1000, 1000 + args.seeds)
    missed = []
    print(f"fixed vs sequential ({BOUNDARY}; waves of 10 tasks), DELTA 5 unless named, alpha {ALPHA:g}, "
          f"{args.seeds} seeds, a pool of {POOL} tasks")
    for truth, clear in cases():
        fixed, seq = replay(truth, seeds)
        ratio = seq.mean / fixed.mean
        gap = right_gap(fixed, seq)[0]
        print(f"{truth.name}{' (clear)' if clear else ''}: sequential / fixed mean episodes {ratio:.2f}; right "
              f"decisions {100 * gap:+.1f} points")
        print(line(truth, "fixed", fixed))
        print(line(truth, "sequential", seq))
        if clear and ratio > 0.6 or seq.interval(seq.wrong)[0] > ALPHA:
            missed.append(truth.name)
    print(f"target (<= 0.6 x episodes on the clear cases, wrong picks <= alpha): "
          f"{'met' if not missed else 'missed on ' + ', '.join(missed)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
