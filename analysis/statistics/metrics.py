"""Metrics per (benchmark, split, model, strategy), with bootstrap CIs over tasks.

By default every record counts (tau2-bench's leaderboard convention, v1.0.1 release notes: pass^k recomputed
"counting infrastructure-error simulations as failed trials"): an episode still `infra` after retries
(provider/network/worker failures) is a FAILED trial (success 0) in success, Pass^k, TGC and SGC, and is counted
per cell (`infra_errors`); every other error (context_overflow, user_simulator, agent, ...) is a failed episode
too, counted per label (`err_<label>`). `exclude=` (analysis `--exclude LABEL`, e.g. `--exclude infra`) drops
labels from the denominator, for a labelled non-default view.

* success: mean over tasks of the task's success rate over its trials (= record mean when trials are equal).
* Pass^k (tau2 / τ-bench): per task C(c, k) / C(n, k), averaged over tasks, k = 1..min trials.
* TGC / SGC (AppWorld): TGC = mean task success; SGC = mean over scenarios of the scenario's min task success
  (a scenario passes only when all its tasks pass), taken per trial and averaged over trials. SGC uses complete
  scenarios only: every task of the scenario (`scenario_tasks` in the record, else AppWorld's 3) has a record
  that is not excluded, in every trial. By default an infra task is a failed task (the scenario fails in that
  trial); a missing task (a LIMIT that cut it), or an infra task under `--exclude infra`, makes the scenario
  incomplete: counted in `scenarios_incomplete`, never passed. Computed where records carry a scenario id.
* tokens/task etc.: mean over the counted records (task x trial), infra ones included: what an episode cut
  short by infra spent was spent (leaving them out made an arm whose long tasks hit infra look 15 % cheaper).
  A record with no agent step (steps 0) spent 0 agent tokens and USD; one with no user-simulator tokens spent
  no user USD. `tokens/task` = agent prompt + completion tokens; `user_tokens/task`, `judge_tokens/task` the
  user simulator's and judge's. A mean where any other record lacks the figure (cached tokens, cost) is unknown
  (nan), never understated.
* Δ vs `none` (same benchmark, split, model): PAIRED on the (task, trial) pairs both cells have, never a
  difference of means over different task sets; points (percentage points) and % (relative), for success and
  tokens; `Δpairs` = how many pairs.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from analysis.statistics import stats
from harness import infra_rates  # the infra-rates rule, shared with the runner (plain definitions)

GROUP = ["benchmark", "split", "model", "assembly", "strategy"]
CELL = ["benchmark", "split", "model", "assembly"]  # assembly: "" unless a run varied placement / policies


def with_assembly(df: pd.DataFrame) -> pd.DataFrame:
    """Frames built by hand (or by older loaders) have no `assembly` column: one setting, ""."""
    return df if "assembly" in df else df.assign(assembly="")
BASELINE = "none"
PER_TASK = ["prompt_tokens", "cached_tokens", "cache_write_tokens", "completion_tokens", "memory_tokens", "tokens",
            "steps", "answer_calls", "cost_usd", "user_cost_usd", "judge_cost_usd", "user_tokens", "judge_tokens"]
AGENT_SPEND = ["prompt_tokens", "cached_tokens", "cache_write_tokens", "completion_tokens", "memory_tokens", "tokens",
               "answer_calls", "cost_usd"]  # none spent by a record with no agent step


def pass_hat_k(n: int, c: int, k: int) -> float:
    """tau2 / τ-bench Pass^k for one task: C(c, k) / C(n, k)."""
    if n < k:
        raise ValueError(f"{n} trials < k={k}")
    return math.comb(c, k) / math.comb(n, k)


INFRA = infra_rates.INFRA
EXCLUDED: tuple[str, ...] = ()  # the default: nothing leaves the denominator; infra = failed trial (tau2 leaderboard)
# every record error label (harness/errors.py), in the order tables show them
ERROR_LABELS = ("context_overflow", "request_rejected", "user_simulator", "agent", "max_steps", "strategy", "harness",
                "infra")
SCENARIO_TASKS = 3  # every AppWorld scenario has 3 tasks (`<7hex>_1..3`); records may say otherwise


def valid(df: pd.DataFrame, exclude: tuple[str, ...] = EXCLUDED) -> pd.DataFrame:
    """The records that count in rates (every error label but the excluded ones), with the CELL columns.

    An `infra` record that counts (the default) is a failed trial: its success is forced to False, its reward to
    0 (tau2-bench's leaderboard convention), so every caller of valid() applies the convention."""
    kept = with_assembly(df[~df["error"].isin(exclude)])
    infra = kept["error"] == INFRA
    if not infra.any():
        return kept
    kept = kept.assign(success=kept["success"].astype(bool) & ~infra)
    return kept.assign(reward=kept["reward"].where(~infra, 0.0)) if "reward" in kept else kept


def error_counts(df: pd.DataFrame) -> dict[str, int]:
    """{label: records} for every error label present (known labels first, in their order)."""
    counts = df["error"].dropna().value_counts()
    order = [n for n in ERROR_LABELS if n in counts] + sorted(n for n in counts.index if n not in ERROR_LABELS)
    return {label: int(counts[label]) for label in order}


def task_success(df: pd.DataFrame) -> pd.Series:
    """Per task: success rate over its trials (index = task_id)."""
    return df.groupby("task_id")["success"].mean().astype(float)


def pass_hat_k_per_task(df: pd.DataFrame, k: int) -> pd.Series:
    per_task = df.groupby("task_id")["success"].agg(["size", "sum"])
    values = [pass_hat_k(int(n), int(c), k) for n, c in zip(per_task["size"], per_task["sum"])]
    return pd.Series(values, index=per_task.index, dtype=float)


def pass_hat_ks(df: pd.DataFrame) -> dict[int, float]:
    """Average over tasks of per-task Pass^k, k = 1..min trials per task (`df` = valid(records))."""
    if df.empty:
        return {}
    max_k = int(df.groupby("task_id").size().min())
    return {k: float(pass_hat_k_per_task(df, k).mean()) for k in range(1, max_k + 1)}


def scenario_completeness(df: pd.DataFrame, exclude: tuple[str, ...] = EXCLUDED) -> pd.Series:
    """Per scenario (all records, excluded ones included): True when, in every trial it appears in, each of
    its tasks has a record that is not excluded. A missing task (or an infra one under --exclude infra) makes the
    scenario incomplete; by default an infra task is a failed task of a complete scenario."""
    scored = df[df["scenario_id"].notna()]
    if scored.empty:
        return pd.Series(dtype=bool)
    size = scored["scenario_tasks"] if "scenario_tasks" in scored else pd.Series(np.nan, index=scored.index)
    size = size.fillna(SCENARIO_TASKS).astype(int).groupby(scored["scenario_id"]).max()
    kept = scored[~scored["error"].isin(exclude)]
    have = kept.groupby(["scenario_id", "trial"])["task_id"].nunique()
    trials = scored.groupby(["scenario_id", "trial"]).size().index
    have = have.reindex(trials, fill_value=0)
    need = size.reindex(have.index.get_level_values("scenario_id")).to_numpy()
    return pd.Series(have.to_numpy() >= need, index=have.index).groupby(level="scenario_id").all()


def scenario_success(df: pd.DataFrame, exclude: tuple[str, ...] = EXCLUDED) -> pd.Series:
    """Per complete scenario: min task success within each trial, averaged over trials (index = scenario_id).

    `df` holds all records (excluded ones too), so that a scenario with an excluded task is seen as incomplete.
    """
    complete = scenario_completeness(df, exclude)
    done = complete[complete].index
    scored = valid(df, exclude)
    scored = scored[scored["scenario_id"].isin(done)]
    if scored.empty:
        return pd.Series(dtype=float)
    per_trial = scored.groupby(["scenario_id", "trial"])["success"].min().astype(float)
    return per_trial.groupby(level="scenario_id").mean()


def tgc(df: pd.DataFrame, exclude: tuple[str, ...] = EXCLUDED) -> float:
    ok = valid(df, exclude)
    return float(ok["success"].mean()) if len(ok) else float("nan")


def sgc(df: pd.DataFrame, exclude: tuple[str, ...] = EXCLUDED) -> float:
    values = scenario_success(df, exclude)
    return float(values.mean()) if len(values) else float("nan")


def with_tokens(df: pd.DataFrame) -> pd.DataFrame:
    """+ `tokens` (agent prompt + completion), `user_tokens` and `judge_tokens` where the records have them."""
    out = {}
    for name, role in (("tokens", ""), ("user_tokens", "user_"), ("judge_tokens", "judge_")):
        if {f"{role}prompt_tokens", f"{role}completion_tokens"} <= set(df.columns):
            out[name] = df[f"{role}prompt_tokens"] + df[f"{role}completion_tokens"]
    return df.assign(**out) if out else df


def spent(df: pd.DataFrame) -> pd.DataFrame:
    """The records' usage with what a record could not have spent set to 0: agent figures of a record with no
    agent step (an episode that failed before its first call, infra or harness), user USD with no user tokens."""
    out: dict[str, pd.Series] = {}
    if "steps" in df:
        idle = df["steps"].fillna(0) == 0
        out |= {c: df[c].where(~idle, 0) for c in AGENT_SPEND if c in df}
    if "user_cost_usd" in df and "user_prompt_tokens" in df:
        out["user_cost_usd"] = df["user_cost_usd"].where(df["user_prompt_tokens"].fillna(0) > 0, 0)
    return df.assign(**out) if out else df


def _rate(row: dict, name: str, per_unit: pd.Series, n_boot: int) -> None:
    row[name] = float(per_unit.mean()) if len(per_unit) else float("nan")
    row[f"{name}_lo"], row[f"{name}_hi"] = stats.bootstrap_ci(per_unit, n_boot=n_boot)


def summarize(df: pd.DataFrame, n_boot: int = stats.N_BOOT, exclude: tuple[str, ...] = EXCLUDED) -> pd.DataFrame:
    """One row per (benchmark, split, model, strategy), rates with 95% bootstrap CIs over tasks.

    `err_<label>` counts every record with that error (excluded or not); `infra_errors` the infra records (failed
    trials by default); `excluded` is the number of records left out of the rates (`exclude` labels)."""
    rows = []
    df = with_tokens(df)
    df = with_assembly(df)
    for key, group in df.groupby(GROUP, sort=False, dropna=False):
        ok = valid(group, exclude)
        row = dict(zip(GROUP, key))
        row.update({
            "tasks": ok["task_id"].nunique(),
            "trials": int(ok.groupby("task_id").size().min()) if len(ok) else 0,
            "records": len(ok),
            "infra_errors": int((group["error"] == INFRA).sum()),
            "excluded": len(group) - len(ok),
            "runs": ",".join(sorted({str(r) for r in group["run"].dropna()})),
        })
        row.update({f"err_{label}": n for label, n in error_counts(group).items()})
        if "update_lost" in group:  # an online learner's update lost after its retries (the episode stands)
            row["updates_lost"] = int(group["update_lost"].fillna(False).astype(bool).sum())
        row["few_tasks"] = row["tasks"] < stats.MIN_TASKS
        _rate(row, "success", task_success(ok), n_boot)
        for k in pass_hat_ks(ok):
            _rate(row, f"pass^{k}", pass_hat_k_per_task(ok, k), n_boot)
        if "scenario_id" in group and group["scenario_id"].notna().any():
            _rate(row, "tgc", task_success(ok), n_boot)
            complete = scenario_completeness(group, exclude)
            row["scenarios"] = int(complete.sum())  # SGC is over these only
            row["scenarios_incomplete"] = int((~complete).sum())
            _rate(row, "sgc", scenario_success(group, exclude), n_boot)
        row.update(per_task_means(ok))
        rows.append(row)
    return add_deltas(pd.DataFrame(rows), df, exclude)


def per_task_means(ok: pd.DataFrame) -> dict[str, float]:
    """`<figure>/task` over the counted records, infra ones included (what they spent was spent)."""
    used = spent(ok)
    out = {}
    for col in PER_TASK:
        values = used[col] if col in used else pd.Series(dtype=float)
        known = len(values) and values.notna().all()
        out[f"{col}/task"] = float(values.astype(float).mean()) if known else float("nan")
    return out


def on_common_pairs(*frames: pd.DataFrame) -> tuple[pd.DataFrame, ...]:
    """Each frame restricted to the (task, trial) pairs every one has: a comparison never mixes task sets."""
    def keys(df: pd.DataFrame) -> pd.Series:
        trials = df["trial"] if "trial" in df else pd.Series(0, index=df.index)  # hand-built frames: one trial
        return pd.Series(list(zip(df["task_id"].astype(str), trials)), index=df.index)

    found = [keys(df) for df in frames]
    common = set.intersection(*map(set, found))
    return tuple(df[k.isin(common)] for df, k in zip(frames, found))


def key_of(values) -> tuple:
    """A group key that compares equal across frames: missing values as "", every value as text."""
    return tuple("" if pd.isna(v) else str(v) for v in values)


def add_deltas(summary: pd.DataFrame, records: pd.DataFrame, exclude: tuple[str, ...] = EXCLUDED) -> pd.DataFrame:
    """Δ vs the `none` row of the same (benchmark, split, model): success in points and %, tokens in %, each
    PAIRED on the (task, trial) pairs both rows have (`Δpairs`), from the records `summary` was made of."""
    out = summary.copy()
    for col in ("Δsuccess_pts", "Δsuccess_%", "Δtokens_%", "Δpairs", "Δtasks", "Δbase_records"):
        out[col] = np.nan
    if out.empty:
        return out
    ok = valid(with_tokens(records), exclude)
    cells = {key_of(k): g for k, g in ok.groupby(GROUP, sort=False, dropna=False)}
    for i, row in out.iterrows():
        base = cells.get(key_of([*(row[c] for c in CELL), BASELINE]))
        mine = cells.get(key_of(row[c] for c in GROUP))
        if base is None or mine is None or row["strategy"] == BASELINE:
            continue
        a, b = on_common_pairs(mine, base)
        if a.empty:
            continue
        rate_a, rate_b = float(task_success(a).mean()), float(task_success(b).mean())
        out.loc[i, ["Δsuccess_pts", "Δpairs", "Δtasks", "Δbase_records"]] = [100 * (rate_a - rate_b), len(a),
                                                                             a["task_id"].nunique(), len(base)]
        out.loc[i, "Δsuccess_%"] = 100 * (rate_a / rate_b - 1) if rate_b else np.nan
        tok_a, tok_b = per_task_means(a)["tokens/task"], per_task_means(b)["tokens/task"]
        out.loc[i, "Δtokens_%"] = 100 * (tok_a / tok_b - 1) if tok_b else np.nan
    return out


def infra_imbalance(summary: pd.DataFrame) -> list[str]:
    """One line per cell (benchmark, split, model, assembly) whose strategies' infra-error rates differ, by the
    rule the runner's end-of-job line uses (harness/infra_rates.py: any difference, even 0 vs 1 record): a
    treatment that causes infra errors must be visible, whichever view is shown."""
    lines: list[str] = []
    if summary.empty or "infra_errors" not in summary:
        return lines
    for key, cell in summary.groupby(CELL, sort=False, dropna=False):
        total = cell["records"] + cell["excluded"]  # every episode, excluded or not
        counts = {s: (int(n), int(t)) for s, n, t in zip(cell["strategy"], cell["infra_errors"], total)}
        if text := infra_rates.differ_text(counts):
            lines.append(f"{infra_rates.where(key)}: {text}; they count as failed trials by default, and "
                         "--exclude infra would hide them")
    return lines


def paired_comparisons(df: pd.DataFrame, n_boot: int = stats.N_BOOT,
                       exclude: tuple[str, ...] = EXCLUDED) -> pd.DataFrame:
    """Every pair of strategies within a (benchmark, split, model) cell, on the (task, trial) pairs both have
    (`pairs`; `n` = their tasks)."""
    rows = []
    ok = valid(df, exclude)
    ok = with_assembly(ok)
    for key, cell in ok.groupby(CELL, sort=False, dropna=False):
        frames = dict(tuple(cell.groupby("strategy", sort=False)))
        names = sorted(frames, key=lambda s: (s != BASELINE, s))  # `none` first, so "vs none" rows read A - none
        for i, a in enumerate(names):
            for b in names[:i]:
                on_a, on_b = on_common_pairs(frames[a], frames[b])
                r = stats.paired(task_success(on_a), task_success(on_b), n_boot=n_boot)
                rows.append({**dict(zip(CELL, key)), "a": a, "b": b, "n": r.n, "pairs": len(on_a),
                             "rate_a": r.rate_a, "rate_b": r.rate_b, "diff_pts": 100 * r.diff,
                             "diff_lo": 100 * r.lo, "diff_hi": 100 * r.hi, "p": r.p, "test": r.test,
                             "few_tasks": r.few_tasks})
    return pd.DataFrame(rows, columns=[*CELL, "a", "b", "n", "pairs", "rate_a", "rate_b", "diff_pts", "diff_lo",
                                       "diff_hi", "p", "test", "few_tasks"])
