"""`python -m analysis.power RUN_DIR... | --profile strong|small` (`make power`): how big a difference the runs can see.

For every strategy against `none` (same benchmark, split, model), paired over the (task, trial) pairs both ran
(`paired` = tasks x trials; analysis.statistics.sizing):

* per-task difference d_t = mean over trials of (success_a - success_b), trials paired by trial index;
* within-task (trial-to-trial) variance s2_w = mean over tasks of the variance of the per-trial differences,
  between-task variance tau2 = max(0, var(d_t) - s2_w / m) (m = trials); with one trial they cannot be split
  and all of var(d_t) is taken as between-task, so more trials are assumed not to help (conservative);
* minimum detectable Δ at 80% power, two-sided α = 0.05, for rerunning these tasks (normal approximation
  of the paired test): MDΔ = t_0.975 x sqrt((tau2 + s2_w / m + MDΔ^2) / n) + z_0.80 x sqrt(s2_w / (m n))
  (see `Variance`: the sign-flip test's spread holds the task spread and Δ^2, a rerun moves only by trial noise);
* tasks needed for a Δ the user names (DELTA points) at 1, 2, 4, 8 trials, for NEW tasks drawn like these: the
  smallest n whose predicted power reaches 80% when the observed Δ moves by the whole spread of the per-task
  difference sqrt((tau2 + s2_w / T) / n), between-task part included (`Variance.new_task_power`) (planning with
  trial noise alone promised 80% and delivered 66-76% on fresh tasks), and never less spread than a true Δ of
  DELTA between 0/1 outcomes has (DELTA (1 - DELTA) / T: a pilot at the ceiling shows none); below the table,
  its range over a bootstrap of the pilot's tasks (one truth's pilots gave 190-925). MDΔ > 100 points: "too few
  tasks to estimate".
A pair is `underpowered` when the tables' paired test (McNemar / sign-flip, two-sided; its p is shown) does not
find the difference AND the observed |Δ| is below its MDΔ: not enough evidence either way. A difference the test
finds is never flagged, whatever its MDΔ (the tables print the same flag by the same rule).
Per strategy it also reports the task-level variance of success and the between-trial agreement (share of
tasks whose trials all agree). When strategies' infra rates differ it says so, with Δ both ways.

`--profile` takes the variances from the SIMULATED world instead of a pilot (analysis.planning.power_world).
"""

from __future__ import annotations

import argparse
import math

import numpy as np
import pandas as pd

from analysis import fmt
from analysis.runs import identity
from analysis.runs.load import add_pool_option
from analysis.statistics import harm, infra, sizing, stats
from analysis.statistics.metrics import BASELINE, CELL, EXCLUDED, INFRA, on_common_pairs, task_success, valid
from analysis.statistics.variance import POWER, TRIAL_GRID, Variance, critical, pair_row, pair_variance, task_ranges, \
    variance_of  # noqa: F401  (analysis.power's public names, as before the split)
from analysis.statistics.verdict import Verdict, harm_tail, pair_band_pts


def agreement(df: pd.DataFrame) -> float:
    """Share of tasks whose trials all agree (all pass or all fail); nan with one trial."""
    per = df.groupby("task_id")["success"].agg(["size", "sum"])
    per = per[per["size"] >= 2]
    if per.empty:
        return float("nan")
    return float(((per["sum"] == 0) | (per["sum"] == per["size"])).mean())


def power_table(records: pd.DataFrame, delta_pts: float = 5.0, alpha: float = stats.ALPHA,
                exclude: tuple[str, ...] = EXCLUDED, ranges: bool = False) -> pd.DataFrame:
    """One row per (benchmark, split, model, strategy) with its pair against `none` (none's own row: no pair);
    `ranges`: tasks@T's bootstrap range over the tasks (`tasks@T range`)."""
    rows = []
    ok = valid(records, exclude)
    for key, cell in ok.groupby(CELL, sort=False, dropna=False):
        by = dict(tuple(cell.groupby("strategy", sort=False)))
        base = by.get(BASELINE)
        for strategy, df in by.items():
            per_task = task_success(df)
            row = {**dict(zip(CELL, key)), "strategy": strategy, "tasks": int(df["task_id"].nunique()),
                   "trials": int(df.groupby("task_id").size().min()),
                   "task_var": float(per_task.var(ddof=1)) if len(per_task) > 1 else float("nan"),
                   "agreement": agreement(df)}
            if base is not None and strategy != BASELINE:
                mine, theirs = on_common_pairs(df, base)
                p = sizing.parts(mine, theirs)
                row["verdict"] = verdict = of_pair(mine, theirs, alpha)
                row.update(pair_row(variance_of(p), delta_pts, alpha, verdict))
                if ranges and p.n:
                    row.update(task_ranges(p, delta_pts, alpha))
            rows.append(row)
    return pd.DataFrame(rows)


def of_pair(mine: pd.DataFrame, base: pd.DataFrame, alpha: float = stats.ALPHA) -> Verdict:
    """A strategy's valid records against `none`'s of the same cell, on the (task, trial) pairs both ran: the
    Δ and its paired test (as the tables), MDΔ, the pair's A/A band, and the per-task harm count."""
    a, b = on_common_pairs(mine, base)
    if not len(a):
        return Verdict(math.nan, alpha=alpha)
    test = stats.paired(task_success(a), task_success(b), n_boot=200)
    v = pair_variance(a, b)
    effects = harm.compare(a, b)
    return Verdict(100 * v.delta, test.p, 100 * v.mdd(alpha), pair_band_pts(a, b), len(effects.harmed),
                   effects.chance, harm_tail(effects.chances, len(effects.harmed)), alpha)


def flag_underpowered(summary: pd.DataFrame, records: pd.DataFrame,
                      exclude: tuple[str, ...] = EXCLUDED) -> pd.DataFrame:
    """summary (analysis.statistics.metrics.summarize) with `MDΔ_pts`, `p` and `underpowered` per strategy row vs
    none."""
    table = power_table(records, exclude=exclude)
    keys = [*CELL, "strategy"]
    cols = [c for c in ("MDΔ_pts", "underpowered", "p", "verdict") if c in table]
    if not cols:
        return summary.assign(MDΔ_pts=np.nan, underpowered=False)
    return summary.merge(table[keys + cols].rename(columns={"p": "Δp"}), on=keys, how="left")


def infra_lines(records: pd.DataFrame, delta_table: pd.DataFrame) -> list[str]:
    """Where strategies' infra rates differ: the line, and each pair's Δ with infra excluded beside the default."""
    lines = infra.differ_lines(records)
    if not lines:
        return []
    other = power_table(records, exclude=(INFRA,)).set_index([*CELL, "strategy"])
    for _, r in delta_table.dropna(subset=["Δ_pts"]).iterrows():
        key = (*(r[c] for c in CELL), r["strategy"])
        if key in other.index and not fmt.missing(other.loc[key, "Δ_pts"]):
            lines.append(f"{r['strategy']} vs none: Δ {fmt.signed(r['Δ_pts'])} points with infra counted as failures "
                         f"(the default), {fmt.signed(other.loc[key, 'Δ_pts'])} with infra excluded")
    return lines


def display(table: pd.DataFrame) -> pd.DataFrame:
    shown = table.copy()
    if "model" in shown:
        shown["model"] = shown["model"].map(fmt.model_label)
    if {"tasks", "trials"} <= set(shown):
        shown.insert(list(shown).index("tasks"), "tasks×k",
                     [f"{n}×{k}" for n, k in zip(shown["tasks"], shown["trials"])])
    for col in ("task_var", "agreement", "predicted_power"):
        if col in shown:
            shown[col] = shown[col].map(lambda v: "-" if fmt.missing(v) else f"{v:.3f}")
    if "Δ_pts" in shown:
        shown["Δ_pts"] = shown["Δ_pts"].map(lambda v: "-" if fmt.missing(v) else fmt.signed(v))
    if "p" in shown:
        shown["p"] = shown["p"].map(fmt.pvalue)
    if "MDΔ_pts" in shown:
        shown["MDΔ_pts"] = shown["MDΔ_pts"].map(fmt.mdd)
    if "underpowered" in shown:
        shown["underpowered"] = shown["underpowered"].map(lambda v: "-" if fmt.missing(v) else
                                                          ("underpowered" if bool(v) else ""))
    for col in [c for c in shown if c.startswith("tasks@") and not c.endswith("range")]:
        shown[col] = shown[col].map(lambda v: "-" if fmt.missing(v) else f"{int(v)}")
    drop = ["tasks", "trials", "tau2", "within", "sd_d", "verdict", *[c for c in shown if c.endswith("range")]]
    return shown.drop(columns=[c for c in drop if c in shown]).fillna("-")


def main(argv: list[str] | None = None) -> int:
    parser = fmt.CommandParser("power", prog="python -m analysis.power", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="*", help="pilot run directories (or results.jsonl files)")
    parser.add_argument("--profile", help="instead of runs: the simulated world's profile (strong | small)")
    parser.add_argument("--world", default="runs/memory/simulated/memory.jsonl", help="with --profile")
    parser.add_argument("--limit", type=int, default=40, help="with --profile: tasks")
    parser.add_argument("--trials", type=int, default=4, help="with --profile: trials per task")
    parser.add_argument("--delta", type=fmt.margin_points, default=5.0, help="the Δ (points) to plan for")
    add_pool_option(parser)
    identity.add_shared_tasks_option(parser)
    args = parser.parse_args(argv)
    above: list[str] = []
    below: list[str] = []
    if args.profile:
        from analysis.planning.power_world import simulated_table
        from harness.scripted.simulated_world import WorldError

        try:
            table = simulated_table(args.profile, args.world, args.limit, args.trials, args.delta)
        except WorldError as exc:
            fmt.refuse("power", exc)
            return 2
        print(fmt.simulated_banner(table["model"]) + "\n")
    elif args.runs:
        from analysis.runs.load import load_for_command

        if (loaded := load_for_command("power", args)) is None:
            return 2
        records, above = loaded
        if banner := fmt.simulated_banner(records["model"].dropna()):
            print(banner + "\n")
        table = power_table(records, args.delta, ranges=True)
        ranges = sizing.range_lines(table, TRIAL_GRID)
        below = [f"WARNING: {line}" for line in infra_lines(records, table)] + (["", (
            f"Tasks needed for Δ = {args.delta:g} points, with the {sizing.SPAN[0]}th-{sizing.SPAN[1]}th percentile "
            "of a bootstrap over these tasks (a pilot's figure moves that much):"), *ranges] if ranges else [])
    else:
        fmt.refuse("power", "give pilot run directories (RUNS=runs/<run>) or --profile strong|small (PROFILE=)")
        return 2
    shown = display(table)
    same = [c for c in ("benchmark", "split", "assembly", "model") if c in shown and shown[c].nunique() <= 1]
    for line in above + ([", ".join(f"{c}: {shown[c].iloc[0] or '-'}" for c in same)] if same else []):
        print(fmt.wrap(line))  # said once above the table: it fits a terminal
    shown = shown.drop(columns=same)
    if "model" in shown:  # several models: one table each under its name, so the rows keep to 160 columns
        print("\n\n".join(f"{model}:\n{fmt.plain(rows.drop(columns='model'))}"
                           for model, rows in shown.groupby("model", sort=False)))
    else:
        print(fmt.plain(shown))
    for line in below:
        print(fmt.wrap(line))
    print("\n" + fmt.wrap(
        f"Paired over the tasks x trials both strategies ran (`paired`), two-sided α = {stats.ALPHA}, power "
        f"{POWER:.0%}. p = the tables' paired test of Δ vs none (McNemar / sign-flip). MDΔ = the smallest difference "
        f"vs none rerunning these tasks x trials detects ('{fmt.TOO_FEW}' when a handful of tasks cannot); tasks@T = "
        f"NEW tasks needed to detect Δ = {args.delta:g} points at T trials per task (the between-task spread "
        f"counts, never less than 0/1 outcomes allow). `underpowered`: p did not find the difference AND the "
        f"observed |Δ| is below the MDΔ (not enough evidence either way); a difference p finds is never flagged. "
        f"agreement = share of tasks whose trials all agree.", ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
