"""`python -m analysis.noise_floor RUN_DIR...` (`make aa`): how far an identical configuration differs from itself.

tau2-bench's users found that two single runs must differ by 5.5–10.7 points on airline before a gap exceeds
repetition noise (tau2-bench issue 540). This measures it from the run itself:

* **A/A from any run with trials >= 2.** Each cell's trials are split into two halves (each task's first
  half of trials against the rest). `observed` is that split's difference; the spread is the 95 % quantile of
  |difference| over random splits of every task's trials (a randomisation distribution: trial noise only, the
  tasks are the same on both sides), then scaled from half the trials to the cell's full size
  (sqrt((2/m) / (1/a + 1/b)) for halves of a and b trials): "an identical configuration differs from itself by up
  to X points (95 %) at this size". A Δ vs none inside ±X could be repetition noise alone.
* **The A/A experiment** (`+experiment=aa`, `make aa`): the same cell run twice with different seeds (strategy
  variants `aa_seed=<seed>`). The observed difference of the two runs, paired on task and trial, beside the
  power module's prediction for a rerun of the same tasks: ±1.96 x sqrt(within / (m n)) (analysis.power:
  `within` = the variance of one trial's difference, estimated from the two runs) and its minimum detectable Δ.
* **Task flip rate** (both): the share of tasks whose verdict differs between the two halves (the two seeds'
  runs, or a run's first half of trials against the rest). A task's verdict in a half is its success, or, with
  several trials in that half, whether its mean success is >= 0.5. tau2-bench's users report 33–55 % of tasks
  flipping between identical runs (issue 540); with one trial per half and success probability p a task flips by
  chance with probability 2p(1-p) (0.5 at p = 0.5).
"""

from __future__ import annotations

import argparse
import math
import re
import sys

import numpy as np
import pandas as pd

from analysis import fmt, power
from analysis.runs import identity
from analysis.runs.load import add_pool_option, family, load_for_command
from analysis.statistics.metrics import CELL, GROUP, valid, with_assembly
from analysis.statistics.verdict import N_SPLITS, SEED, Verdict, aa_line, outcomes, split_band

AA_VARIANT = re.compile(r"aa_seed=(\d+)")  # configs/experiment/aa.yaml


def _seed(strategy: str) -> int:
    """The aa_seed of an A/A copy's strategy label (only labels that match reach here)."""
    match = AA_VARIANT.search(strategy)
    if match is None:
        raise ValueError(f"{strategy!r} is not an A/A copy (no aa_seed=N)")
    return int(match.group(1))


def flip_rate(first: np.ndarray, second: np.ndarray) -> float:
    """Share of tasks whose verdict differs between two halves: tasks x trials 0/1 matrices (rows = the same
    tasks); a task's verdict in a half = its mean success over that half's trials >= 0.5 (one trial: its success)."""
    first, second = np.asarray(first, float), np.asarray(second, float)
    if first.ndim == 1:
        first, second = first[:, None], second[:, None]
    if not len(first):
        return float("nan")
    return float(np.mean((first.mean(axis=1) >= 0.5) != (second.mean(axis=1) >= 0.5)))


def pair_flip_rate(a: pd.DataFrame, b: pd.DataFrame) -> float:
    """flip_rate of two runs' records on their shared tasks, each task's first m trials (m = the fewest in either)."""
    shared = set(a["task_id"].astype(str)) & set(b["task_id"].astype(str))
    xa, xb = (outcomes(r[r["task_id"].astype(str).isin(shared)]) for r in (a, b))
    if xa.size == 0 or xb.size == 0:
        return float("nan")
    m = min(xa.shape[1], xb.shape[1])
    return flip_rate(xa[:, :m], xb[:, :m])


def flip_line(rate: float, tasks: int, half: str) -> str:
    """'task flip rate: X% of T tasks change verdict between the halves (h trials each; ...)'."""
    return (f"task flip rate: {100 * rate:.1f}% of {tasks} tasks change verdict between the halves ({half} trials; "
            "verdict = success, or mean >= 0.5 over a half's trials; tau2-bench issue 540: 33-55%)")


def aa_spread(df: pd.DataFrame, n_splits: int = N_SPLITS, seed: int = SEED) -> dict:
    """One cell's A/A figures (points): observed (first half vs second), spread_half (95 % of |difference| over
    random splits, halves of a and b trials), spread (scaled to the cell's m trials per side); empty when m < 2."""
    x = outcomes(df) if len(df) else np.zeros((0, 0))
    if x.size == 0 or x.shape[1] < 2:
        return {}
    tasks, m = x.shape
    a, b = m // 2, m - m // 2
    observed = x[:, :a].mean(axis=1) - x[:, a:].mean(axis=1)
    half = split_band(x, a, n_splits, seed)
    scale = math.sqrt((2 / m) / (1 / a + 1 / b))
    return {"aa_tasks": tasks, "aa_trials": m, "aa_half": f"{a}+{b}", "aa_observed_pts": 100 * float(observed.mean()),
            "aa_spread_half_pts": 100 * half, "aa_spread_pts": 100 * half * scale,
            "aa_flip_rate": flip_rate(x[:, :a], x[:, a:])}


def per_cell(records: pd.DataFrame, exclude: tuple[str, ...] = ()) -> pd.DataFrame:
    """One row per (benchmark, split, model, assembly, strategy) with trials >= 2: its A/A figures."""
    rows = []
    for key, g in with_assembly(valid(records, exclude)).groupby(GROUP, sort=False, dropna=False):
        figures = aa_spread(g)
        if figures:
            rows.append({**dict(zip(GROUP, key)), **figures})
    return pd.DataFrame(rows, columns=[*GROUP, "aa_tasks", "aa_trials", "aa_half", "aa_observed_pts",
                                       "aa_spread_half_pts", "aa_spread_pts", "aa_flip_rate"])


def add_aa(summary: pd.DataFrame, records: pd.DataFrame, exclude: tuple[str, ...] = ()) -> pd.DataFrame:
    """The summary with `aa_spread_pts` and `aa_observed_pts` per row (nan where a row has one trial)."""
    aa = per_cell(records, exclude)[[*GROUP, "aa_spread_pts", "aa_observed_pts", "aa_spread_half_pts"]]
    return with_assembly(summary).merge(aa, on=GROUP, how="left")


def sentence(row: pd.Series) -> str:
    """'an identical configuration differs from itself by up to X points (95%) at this size (T tasks x m trials)'."""
    if fmt.missing(row.get("aa_spread_pts")):
        return "A/A: needs trials >= 2"
    return (f"an identical configuration differs from itself by up to {row['aa_spread_pts']:.1f} points (95%) at "
            f"this size ({int(row['aa_tasks'])} tasks x {int(row['aa_trials'])} trials)")


def experiment_pairs(records: pd.DataFrame, exclude: tuple[str, ...] = ()) -> pd.DataFrame:
    """`+experiment=aa`: per cell and strategy family, its first two `aa_seed=` variants against each other."""
    ok = with_assembly(valid(records, exclude))
    ok = ok[ok["strategy"].astype(str).map(lambda s: bool(AA_VARIANT.search(s)))]
    rows = []
    for key, cell in ok.groupby(CELL, sort=False, dropna=False):
        for name, fam in cell.groupby(cell["strategy"].map(family), sort=False):
            labels = sorted(fam["strategy"].unique(), key=_seed)
            if len(labels) < 2:
                continue
            a, b = (fam[fam["strategy"] == s] for s in labels[:2])
            v = power.pair_variance(a, b)
            predicted = 1.96 * math.sqrt(v.within / (v.m * v.n)) if v.split and v.n else float("nan")
            rows.append({**dict(zip(CELL, key)), "strategy": name, "a": labels[0], "b": labels[1], "tasks": v.n,
                         "trials": v.m, "observed_pts": 100 * v.delta, "predicted_95_pts": 100 * predicted,
                         "MDΔ_pts": 100 * v.mdd(), "flip_rate": pair_flip_rate(a, b),
                         "within_prediction": None if math.isnan(predicted) else  # the verdict's band rule
                         not Verdict(100 * v.delta, band_pts=100 * predicted).outside_band})
    return pd.DataFrame(rows)


def experiment_line(pair: pd.Series) -> str:
    """'<model> <a> vs <b> (T tasks x m trials): observed +1.9 points, predicted ±10.6, MDΔ 18.2: within the
    prediction' (one row of experiment_pairs)."""
    within = {True: "within the prediction", False: "OUTSIDE the prediction", None: "no prediction at 1 trial"}
    return (f"{fmt.model_label(pair['model'])} {pair['a']} vs {pair['b']} ({int(pair['tasks'])} tasks x "
            f"{int(pair['trials'])} trials): observed {fmt.signed(pair['observed_pts'])} points, predicted "
            f"±{fmt.mdd(pair['predicted_95_pts'])}, MDΔ {fmt.mdd(pair['MDΔ_pts'])}: "
            f"{within[pair['within_prediction']]}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m analysis.noise_floor", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="+", help="run directories (or results.jsonl files)")
    add_pool_option(parser)
    identity.add_shared_tasks_option(parser)  # the A/A pairs are paired on task ids: one task set
    args = parser.parse_args(argv)
    if (loaded := load_for_command("noise_floor", args)) is None:
        return 2
    records, above = loaded
    if banner := fmt.simulated_banner(records["model"].dropna()):
        print(banner + "\n")
    for line in above:
        print(fmt.wrap(line))
    cells = per_cell(records)
    if cells.empty:
        print("A/A from the run: every cell has one trial per task; rerun with TRIALS=2 or more")
    for _, row in cells.iterrows():
        print(fmt.wrap(f"{fmt.model_label(row['model'])} {row['strategy']}: {sentence(row)}; its own halves "
                       f"({row['aa_half']} trials) {aa_line(row['aa_observed_pts'], row['aa_spread_half_pts'])}"))
        print(fmt.wrap("  " + flip_line(row["aa_flip_rate"], int(row["aa_tasks"]), row["aa_half"]), "    "))
    pairs = experiment_pairs(records)
    if not pairs.empty:
        print("\nA/A experiment (the same cell, two seeds; paired on task and trial; predicted = ±1.96 x the power "
              "module's rerun spread sqrt(within / (trials x tasks))):")
    for _, pair in pairs.iterrows():
        print(fmt.wrap(experiment_line(pair)))
        half = f"{int(pair['trials'])}+{int(pair['trials'])}"
        print(fmt.wrap(f"  {flip_line(pair['flip_rate'], int(pair['tasks']), half)}", "    "))
    return 0


if __name__ == "__main__":
    sys.exit(main())
