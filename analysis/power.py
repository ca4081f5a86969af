"""`python -m analysis.power RUN_DIR... | --profile strong|small` (`make power`): how big a difference the runs can see.

For every strategy against `none` (same benchmark, split, model), paired over tasks like analysis.stats:

* per-task difference d_t = mean over trials of (success_a - success_b), trials paired by trial index;
* within-task (trial-to-trial) variance s2_w = mean over tasks of the variance of the per-trial differences,
  between-task variance tau2 = max(0, var(d_t) - s2_w / m) (m = trials); with one trial they cannot be split
  and all of var(d_t) is taken as between-task, so more trials are assumed not to help (conservative);
* minimum detectable Δ at 80% power, two-sided α = 0.05, for rerunning these tasks (normal approximation
  of the paired test): MDΔ = t_0.975 x sqrt((tau2 + s2_w / m + MDΔ^2) / n) + z_0.80 x sqrt(s2_w / (m n))
  (see `Variance`: the sign-flip test's spread holds the task spread and Δ^2, a rerun moves only by trial noise);
* tasks needed for a Δ the user names (DELTA points) at 1, 2, 4, 8 trials, for NEW tasks drawn like these: the
  smallest n whose predicted power reaches 80% when the observed Δ moves by the whole spread of the per-task
  difference sqrt((tau2 + s2_w / T) / n), between-task part included (`Variance.new_task_power`) (planning with trial noise alone promised 80% and
  delivered 66-76% on fresh tasks). MDΔ above 100 points is "too few tasks to estimate".
A pair whose observed |Δ| is below its MDΔ is `underpowered`: its CI is too wide to call the difference.
Per strategy it also reports the task-level variance of success and the between-trial agreement (share of
tasks whose trials all agree).

`--profile` takes the variances from the SIMULATED world instead of a pilot (strategies/simulated_world.py: the
planted p per task; two different deliveries draw independently, so Var(D) = p_a(1 - p_a) + p_b(1 - p_b)),
for none, full and core (the guidelines with support >= 3) on the artifact's first LIMIT tasks.
"""

from __future__ import annotations

import argparse
import math
import sys
import textwrap
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
import pandas as pd

from analysis import fmt, stats
from analysis.load import add_pool_option
from analysis.metrics import BASELINE, CELL, task_success, valid

POWER = 0.80
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

        def enough(n: int) -> bool:
            return self.new_task_power(n, trials, delta, alpha) >= power

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
    ya = a.groupby(["task_id", "trial"])["success"].mean().astype(float)
    yb = b.groupby(["task_id", "trial"])["success"].mean().astype(float)
    both = pd.concat([ya.rename("a"), yb.rename("b")], axis=1, join="inner").dropna()
    if both.empty:
        return Variance(0, 0, float("nan"), float("nan"), float("nan"))
    diff = (both["a"] - both["b"]).groupby(level="task_id")
    d, per_task_trials = diff.mean(), diff.size()
    m = int(per_task_trials.min())
    var_d = float(d.var(ddof=1)) if len(d) > 1 else 0.0
    if m >= 2:
        within = float(diff.var(ddof=1).mean())
        tau2 = max(0.0, var_d - within / m)
    else:  # one trial: the two parts cannot be told apart; all of it counted between tasks
        return Variance(len(d), m, float(d.mean()), var_d, 0.0, split=False)
    return Variance(len(d), m, float(d.mean()), tau2, within)


def agreement(df: pd.DataFrame) -> float:
    """Share of tasks whose trials all agree (all pass or all fail); nan with one trial."""
    per = df.groupby("task_id")["success"].agg(["size", "sum"])
    per = per[per["size"] >= 2]
    if per.empty:
        return float("nan")
    return float(((per["sum"] == 0) | (per["sum"] == per["size"])).mean())


def power_table(records: pd.DataFrame, delta_pts: float = 5.0, alpha: float = stats.ALPHA) -> pd.DataFrame:
    """One row per (benchmark, split, model, strategy) with its pair against `none` (none's own row: no pair)."""
    rows = []
    ok = valid(records)
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
                v = pair_variance(df, base)
                row.update(pair_row(v, delta_pts, alpha))
            rows.append(row)
    return pd.DataFrame(rows)


def pair_row(v: Variance, delta_pts: float, alpha: float = stats.ALPHA) -> dict:
    mdd = 100 * v.mdd(alpha)  # inf: too few tasks to estimate
    row = {"Δ_pts": 100 * v.delta, "MDΔ_pts": mdd, "underpowered": bool(abs(100 * v.delta) < mdd),
           "sd_d": math.sqrt(v.var_d()), "tau2": v.tau2, "within": v.within}
    for t in TRIAL_GRID:
        if not v.split and t != v.m:
            row[f"tasks@{t}"] = None  # cannot say how trials would help
        else:
            row[f"tasks@{t}"] = v.tasks_needed(delta_pts / 100, t, alpha)
    return row


def flag_underpowered(summary: pd.DataFrame, records: pd.DataFrame) -> pd.DataFrame:
    """summary (analysis.metrics.summarize) with `MDΔ_pts` and `underpowered` per strategy row vs none."""
    table = power_table(records)
    keys = [*CELL, "strategy"]
    cols = [c for c in ("MDΔ_pts", "underpowered") if c in table]
    if not cols:
        return summary.assign(MDΔ_pts=np.nan, underpowered=False)
    return summary.merge(table[keys + cols], on=keys, how="left")


# --- the simulated world, analytically ----------------------------------------------------------------------

def simulated_variance(p_a: dict[str, float], p_b: dict[str, float], trials: int) -> Variance:
    """Planted per-task p of two strategies that deliver differently (so draw independently) -> the paired
    difference's variance: one trial's difference has variance p_a(1 - p_a) + p_b(1 - p_b)."""
    a, b = np.array([p_a[t] for t in p_a]), np.array([p_b[t] for t in p_a])
    diffs = a - b
    within = float(np.mean(a * (1 - a) + b * (1 - b)))
    tau2 = float(diffs.var(ddof=0))
    return Variance(len(diffs), trials, float(diffs.mean()), tau2, within)


def simulated_ps(profile: str, artifact: str, limit: int) -> dict[str, dict[str, float]]:
    """strategy (none, full, core) -> task id -> planted p, for the artifact's first `limit` tasks."""
    from strategies import simulated_world as world
    from strategies import load_memory, render_guidelines

    prof, w = world.profile(profile), world.load_world(artifact)  # WorldError before anything else
    guidelines, meta = load_memory(artifact)
    tasks = meta["simulated"]["tasks"][:limit]
    blocks = {"none": "", "full": render_guidelines(guidelines),
              "core": render_guidelines([g for g in guidelines if g.support >= 3])}
    return {s: {t: world.expected_p(prof, w, t, b) for t in tasks} for s, b in blocks.items()}


def simulated_table(profile: str, artifact: str, limit: int, trials: int, delta_pts: float) -> pd.DataFrame:
    ps = simulated_ps(profile, artifact, limit)
    rows = []
    for strategy in ("full", "core"):
        v = simulated_variance(ps[strategy], ps[BASELINE], trials)
        rows.append({"model": f"memdeliv-simulated/{profile}", "strategy": strategy, "tasks": v.n,
                     "trials": trials, **pair_row(v, delta_pts), "predicted_power": v.power()})
    return pd.DataFrame(rows)


def display(table: pd.DataFrame) -> pd.DataFrame:
    shown = table.copy()
    if "model" in shown:
        shown["model"] = shown["model"].map(fmt.model_label)
    for col in ("task_var", "agreement", "sd_d", "tau2", "within", "predicted_power"):
        if col in shown:
            shown[col] = shown[col].map(lambda v: "-" if fmt.missing(v) else f"{v:.3f}")
    if "Δ_pts" in shown:
        shown["Δ_pts"] = shown["Δ_pts"].map(lambda v: "-" if fmt.missing(v) else f"{v:+.1f}")
    if "MDΔ_pts" in shown:
        shown["MDΔ_pts"] = shown["MDΔ_pts"].map(fmt.mdd)
    if "underpowered" in shown:
        shown["underpowered"] = shown["underpowered"].map(lambda v: "-" if fmt.missing(v) else
                                                          ("underpowered" if bool(v) else ""))
    for col in [c for c in shown if c.startswith("tasks@")]:
        shown[col] = shown[col].map(lambda v: "-" if fmt.missing(v) else f"{int(v)}")
    return shown.drop(columns=[c for c in ("tau2", "within") if c in shown])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m analysis.power", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="*", help="pilot run directories (or results.jsonl files)")
    parser.add_argument("--profile", help="instead of runs: the simulated world's profile (strong | small)")
    parser.add_argument("--world", default="runs/memory/simulated/memory.jsonl", help="with --profile")
    parser.add_argument("--limit", type=int, default=40, help="with --profile: tasks")
    parser.add_argument("--trials", type=int, default=4, help="with --profile: trials per task")
    parser.add_argument("--delta", type=float, default=5.0, help="the Δ (points) to plan for")
    add_pool_option(parser)
    args = parser.parse_args(argv)
    if args.delta <= 0:
        print("memdeliv power: --delta must be > 0 (points)", file=sys.stderr)
        return 2
    if args.profile:
        from strategies.simulated_world import WorldError

        try:
            table = simulated_table(args.profile, args.world, args.limit, args.trials, args.delta)
        except WorldError as exc:
            print(f"memdeliv power: {exc}", file=sys.stderr)
            return 2
        print(fmt.simulated_banner(table["model"]) + "\n")
    elif args.runs:
        from analysis.load import load_records

        try:
            records = load_records(args.runs, overlap="pool" if args.pool_runs else "refuse")
        except (FileNotFoundError, ValueError) as exc:  # a missing run, or runs holding the same episodes
            print(f"memdeliv power: {exc}", file=sys.stderr)
            return 2
        if records.empty:
            print("memdeliv power: no records found", file=sys.stderr)
            return 2
        if banner := fmt.simulated_banner(records["model"].dropna()):
            print(banner + "\n")
        table = power_table(records, args.delta)
    else:
        print("memdeliv power: give pilot run directories (RUNS=) or --profile strong|small (PROFILE=)",
              file=sys.stderr)
        return 2
    shown = display(table)
    same = [c for c in ("benchmark", "split", "assembly") if c in shown and shown[c].nunique() <= 1]
    if same:  # said once above the table: the table fits a terminal
        print(", ".join(f"{c}: {shown[c].iloc[0] or '-'}" for c in same))
    print(fmt.plain(shown.drop(columns=same)))
    print("\n" + textwrap.fill(
        f"Paired over tasks, two-sided α = {stats.ALPHA}, power {POWER:.0%}. MDΔ = the smallest difference vs none "
        f"rerunning these tasks x trials detects ('{fmt.TOO_FEW}' when a handful of tasks cannot); tasks@T = NEW "
        f"tasks needed to detect Δ = {args.delta:g} points at T trials per task (the between-task spread counts). "
        f"`underpowered`: the observed |Δ| is below the MDΔ (not enough evidence either way). agreement = share of "
        f"tasks whose trials all agree.", 160))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
