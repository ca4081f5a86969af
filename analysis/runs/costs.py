"""USD per task and per successful task, by role, for every table row; and which rows a budget cut short.

From the records' recorded costs (harness: `litellm.completion_cost` on each call, or the model config's
`price_per_mtok_*`; the provider's reported cached tokens at the cached price, Anthropic cache writes at the
write price; strategies/prices.py):

* `usd_agent/task`, `usd_user/task`, `usd_judge/task`: mean per counted record, infra ones included (as
  tokens/task, analysis.statistics.metrics.per_task_means: what they spent was spent);
  `usd_strategy/task`: a strategy's own model calls, and `usd_<role>/task` for any other role a row's usage
  names (`learning`: an online learner's update; a plugin's), by add_role_calls (0 for rows that make none);
  `usd/task` their sum: unknown (nan) when any role is unpriced, never understated;
* `usd/success` = usd/task / success rate: what one successful task costs (inf when none succeeded);
* with the memory build amortised (analysis.runs.build_cost): `usd+build/task`, `usd+build/success`;
* `budget`: "incomplete (budget)" when the run's manifest says a `budget_usd` stopped the job before all its
  episodes ran (harness: docs/cost.md), else "".
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from analysis.statistics.metrics import GROUP, key_of
from harness.usage import IDLE, column, ordered  # the one list of roles (a plain definition)

INCOMPLETE = "incomplete (budget)"
# the roles every episode reports (harness/usage.py IDLE): their USD/task is the summary's per-task mean
ROLES = {f"usd_{role}/task": f"{column(role, 'cost')}/task" for role in IDLE}


def _per_success(usd: float, success: float) -> float:
    if pd.isna(usd) or pd.isna(success):
        return float("nan")
    return float("inf") if success == 0 else usd / success


def called_roles(records: pd.DataFrame) -> list[str]:
    """The roles beyond every episode's that made calls: the strategy's own (always listed), an online learner's
    `learning`, a plugin's, in table order (harness/usage.py `ordered`), read from the records' usage mapping."""
    seen = [role for usage in (records["usage"] if "usage" in records else ()) if isinstance(usage, dict)
            for role in usage]
    return [role for role in ordered(["strategy", *seen]) if role not in IDLE]


def add_costs(summary: pd.DataFrame, records: pd.DataFrame) -> pd.DataFrame:
    out = summary.copy()
    for name, col in ROLES.items():
        values = out[col] if col in out else pd.Series(np.nan, index=out.index)
        if name == "usd_judge/task" and "judge_cost_usd" not in records:
            values = pd.Series(0.0, index=out.index)  # records from before the judge was ledgered: no judge
        out[name] = values.astype(float)
    called = called_roles(records)
    for role in called:
        out = add_role_calls(out, records, role)
    roles = [*ROLES, *(f"usd_{role}/task" for role in called)]
    out["usd/task"] = out[roles].sum(axis=1, min_count=len(roles)).where(out[roles].notna().all(axis=1))
    out["usd/success"] = [_per_success(u, s) for u, s in zip(out["usd/task"], out["success"])]
    build = out["build_cost/task"] if "build_cost/task" in out else pd.Series(0.0, index=out.index)
    out["usd+build/task"] = out["usd/task"] + build
    out["usd+build/success"] = [_per_success(u, s) for u, s in zip(out["usd+build/task"], out["success"])]
    out["budget"] = budget_flags(out, records)
    return out


def add_role_calls(summary: pd.DataFrame, records: pd.DataFrame, role: str) -> pd.DataFrame:
    """A role's model calls per task beyond every episode's (record usage `strategy`: e.g. ace_retrieval's LLM
    ranker, docs/dose.md; `learning`: an online learner's update), as a mean over the row's records, infra ones
    included: `<role>_calls/task`, `<role>_tokens/task`, `usd_<role>/task`. A record without the role made no
    such call (0); a call LiteLLM could not price makes the row's USD unknown (nan)."""
    calls, cost = column(role, "calls"), column(role, "cost")
    names = [f"{role}_calls/task", f"{role}_tokens/task", f"usd_{role}/task"]
    out = summary.assign(**{n: 0.0 for n in names})
    if calls not in records or out.empty:
        return out
    made = records[calls].notna()
    frame = records.assign(
        calls=records[calls].fillna(0).astype(float),
        tokens=sum(records[c].fillna(0).astype(float) if c in records else 0.0
                   for c in (column(role, "prompt"), column(role, "completion"))),
        usd=records[cost].where(made, 0.0) if cost in records else 0.0)
    means = {key_of(key): g for key, g in frame.groupby(GROUP, dropna=False)}
    for i, r in out.iterrows():
        g = means.get(key_of(r[c] for c in GROUP))
        if g is None:
            continue
        usd_known = g["usd"].notna().all()
        out.loc[i, names] = [g["calls"].mean(), g["tokens"].astype(float).mean(),
                             g["usd"].astype(float).mean() if usd_known else np.nan]
    return out


def stopped_jobs(run_dir: str | Path) -> set[str]:
    """Jobs of a run whose last launch stopped at its budget (manifest `jobs.<job>.budget.stopped`)."""
    path = Path(run_dir) / "manifest.json"
    try:
        jobs = json.loads(path.read_text(encoding="utf-8")).get("jobs", {})
    except (OSError, ValueError):
        return set()
    return {key for key, facts in jobs.items() if (facts.get("budget") or {}).get("stopped")}


def budget_flags(summary: pd.DataFrame, records: pd.DataFrame) -> list[str]:
    if "run_dir" not in records or "job" not in records or summary.empty:
        return [""] * len(summary)
    stopped = {(str(d), j) for d in records["run_dir"].dropna().unique() for j in stopped_jobs(d)}
    if not stopped:
        return [""] * len(summary)
    hit = records[[(str(d), j) in stopped for d, j in zip(records["run_dir"], records["job"])]]
    cells = {key_of(key) for key, _ in hit.groupby(GROUP, dropna=False)}
    return [INCOMPLETE if key_of(r[c] for c in GROUP) in cells else ""
            for _, r in summary.iterrows()]


def usd(v) -> str:
    """'$0.0123', 'n/a' for unknown (unpriced), 'no successes' for inf."""
    if v is None or (isinstance(v, float) and np.isnan(v)):
        return "n/a"
    if np.isinf(v):
        return "no successes"
    return f"${v:,.4f}" if v < 100 else f"${v:,.0f}"
