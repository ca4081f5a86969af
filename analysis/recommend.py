"""`python -m analysis.recommend RUN_DIR... [--k K] [--by tokens|cost] [--delta D]` (`make recommend`): what to deploy.

Per (benchmark, split, model): a strategy qualifies when it is *shown* to be at most DELTA points below every
other strategy on the ranked metric (success or Pass^K), by one-sided task-paired tests Holm-corrected over
the strategies (analysis.noninferiority). The recommendation is the cheapest qualifying strategy, by tokens or
by cost per task with the one-off cost of building its memory amortised in (analysis.build_cost). When no
strategy qualifies the answer is "No decision yet", never a strategy name, with how many tasks (x trials)
would settle it. It says why in plain sentences (docs/deciding.md).
"""

from __future__ import annotations

import argparse
import math
import sys
import textwrap
from dataclasses import dataclass, field

import pandas as pd

from analysis import fmt, noninferiority, power, stats
from analysis.build_cost import add_build_cost
from analysis.costs import add_costs
from analysis.load import add_pool_option
from analysis.metrics import (CELL, GROUP, pass_hat_k_per_task, per_task_means, task_success, valid,
                              with_assembly, with_tokens)


@dataclass
class Recommendation:
    benchmark: str
    split: str
    model: str
    assembly: str  # "" unless the runs varied placement / context policy / answer mode (analysis.metrics.CELL)
    k: int
    best: str  # the best observed rate (not a recommendation)
    choice: str | None  # None: no decision yet
    candidates: list[str]  # strategies shown non-inferior at the margin, best observed first
    per_task: dict[str, float]  # strategy -> price per task (tokens or USD) including amortised build
    margin_pts: float = 5.0
    rates: dict[str, float] = field(default_factory=dict)
    more_tasks: int | None = None  # with no decision: new tasks (at the trials run) that would settle it
    sentences: list[str] = field(default_factory=list)

    @property
    def decided(self) -> bool:
        return self.choice is not None


def per_task_metric(df: pd.DataFrame, k: int) -> pd.Series:
    return task_success(df) if k == 1 else pass_hat_k_per_task(df, k)


def _per_task_prices(ok: pd.DataFrame) -> pd.DataFrame:
    """Per (cell, strategy): records and the per-task figures exactly as the tables compute them
    (analysis.metrics.per_task_means: infra episodes' partial usage left out; unknown stays nan)."""
    rows = [{**dict(zip(GROUP, key)), "records": len(group), "success": group["success"].mean(),
             **per_task_means(group)}
            for key, group in with_assembly(with_tokens(ok)).groupby(GROUP, sort=False, dropna=False)]
    return pd.DataFrame(rows)


def _price(row: pd.Series, by: str) -> tuple[float, str]:
    """(price per task, how it was priced): delivery plus amortised build; unknown build priced as 0, said so."""
    if by == "cost":
        # what the tables price: agent + user simulator + judge + the strategy's own calls (analysis.costs)
        base, build, unit = row.get("usd/task"), row.get("build_cost/task"), "USD"
    else:
        base, build, unit = row.get("tokens/task"), row.get("build_tokens/task"), "tokens"
    if fmt.missing(base):
        return math.nan, f"{unit} not reported"
    if fmt.missing(build):
        return float(base), "build cost unknown, not included"
    return float(base) + float(build), ""


def _money(value: float, by: str) -> str:
    if fmt.missing(value):
        return "n/a"
    return f"${value:,.2f}" if by == "cost" else f"{value:,.0f} tokens"


def recommend(records: pd.DataFrame, k: int = 1, by: str = "tokens", delta_pts: float = 5.0,
              amortise_over: int | None = None, alpha: float = stats.ALPHA) -> list[Recommendation]:
    if by not in ("tokens", "cost"):
        raise ValueError(f"--by must be tokens or cost, not {by!r}")
    ok = valid(records)
    summary = add_build_cost(_per_task_prices(ok), ok, amortise_over)
    summary = add_costs(summary, ok) if by == "cost" else summary
    out = []
    for key, cell in ok.groupby(CELL, sort=False, dropna=False):
        groups = dict(tuple(cell.groupby("strategy", sort=False)))
        trials = min(int(g.groupby("task_id").size().min()) for g in groups.values())
        if trials < k:
            raise ValueError(f"{'/'.join(map(str, key))}: Pass^{k} needs >= {k} trials per task, have {trials}")
        rows = summary[(summary[CELL].apply(tuple, axis=1) == tuple(key))].set_index("strategy")
        out.append(_decide(key, groups, rows, k, by, delta_pts, alpha, trials, cell["task_id"].nunique()))
    return out


def _decide(key: tuple, groups: dict[str, pd.DataFrame], rows: pd.DataFrame, k: int, by: str, delta_pts: float,
            alpha: float, trials: int, n_tasks: int) -> Recommendation:
    margin = delta_pts / 100
    metric = {s: per_task_metric(g, k) for s, g in groups.items()}
    arms = noninferiority.assess(metric, margin, alpha)
    prices = {s: _price(rows.loc[s], by) for s in groups}
    rank = sorted(arms, key=lambda s: (-arms[s].rate, _sortable(prices[s][0])))
    best = rank[0]
    label = "success" if k == 1 else f"Pass^{k}"
    rec = Recommendation(*key, k=k, best=best, choice=None, candidates=[s for s in rank if arms[s].shown],
                         per_task={s: p for s, (p, _) in prices.items()}, margin_pts=delta_pts,
                         rates={s: arms[s].rate for s in rank})
    say = rec.sentences.append
    setting = f" ({key[3]})" if key[3] else ""
    say(f"{fmt.model_label(key[2])} on {key[0]}/{key[1]}{setting}: {n_tasks} tasks x {trials} trials, ranked on "
        f"{label}. Margin DELTA = {delta_pts:g} points: a strategy qualifies only when one-sided paired t-tests over "
        f"tasks show it is at most {delta_pts:g} points below every other strategy (alpha = {alpha:g}, Holm-corrected "
        f"over {len(arms)} strategies). Priced by {by} per task with memory building amortised.")
    say(f"Observed {label}: " + ", ".join(f"{s} {fmt.pct(arms[s].rate)}" for s in rank) + ".")
    for s in rank:
        say(_verdict(arms[s], delta_pts))
    for s in rec.candidates:
        if prices[s][1]:
            say(f"{s}: {prices[s][1]}.")
    if not rec.candidates:
        _no_decision(rec, arms, groups, k, trials, n_tasks, alpha)
        return rec
    priced = [s for s in rec.candidates if not fmt.missing(prices[s][0])]
    if not priced:
        rec.choice = rec.candidates[0]
        say(f"No qualifying strategy has a {by} figure, so none can be ranked on price; the qualifying strategy "
            f"with the best {label}, {rec.choice}, stands" + (" (try --by tokens)." if by == "cost" else "."))
        return rec
    rec.choice = min(priced, key=lambda s: (prices[s][0], -arms[s].rate))
    row = rows.loc[rec.choice]
    build = row.get("build_tokens") if by == "tokens" else row.get("build_cost_usd")
    say(f"Recommended: {rec.choice}, the cheapest strategy shown to be non-inferior at margin {delta_pts:g} points "
        f"(at most {delta_pts:g} points below every other): {_money(prices[rec.choice][0], by)} per task including "
        f"its build ({_money(build, by)} one-off, amortised over {_amortised(row)} task runs), so "
        f"{_money(1000 * prices[rec.choice][0], by)} per 1,000 tasks.")
    if rec.choice != best:
        say(f"{rec.choice} is {100 * (arms[rec.choice].rate - arms[best].rate):+.1f} points from the best observed, "
            f"{best}; a difference that small is within the margin you set.")
    return rec


def _verdict(arm: noninferiority.Arm, delta_pts: float) -> str:
    q = arm.weakest
    if q is None:
        return f"{arm.strategy}: the only strategy in this cell."
    p = fmt.pvalue(arm.p_holm)
    p = p.replace("<", "< ") if p.startswith("<") else "= " + p
    lower = "-inf" if math.isinf(q.lower) else f"{100 * q.lower:+.1f}"
    against = f"closest call vs {q.other}: {100 * q.diff:+.1f} pts, 95% lower bound {lower}"
    if arm.shown:
        return f"{arm.strategy}: non-inferior at margin {delta_pts:g} ({against} > -{delta_pts:g}; Holm p {p})."
    return (f"{arm.strategy}: not shown to be within {delta_pts:g} points of every other ({against}, needs > "
            f"-{delta_pts:g}; Holm p {p}).")


def _no_decision(rec: Recommendation, arms: dict[str, noninferiority.Arm], groups: dict[str, pd.DataFrame],
                 k: int, trials: int, n_tasks: int, alpha: float) -> None:
    """"No decision yet", with the new tasks (x trials) that would settle it if the observed differences hold."""
    margin = rec.margin_pts / 100
    variances: dict[frozenset, power.Variance] = {}  # a pair's variance is the same both ways: computed once
    plans = []
    for s, arm in arms.items():
        for t in (trials, 2 * trials):
            sd_at = _sd_at(s, arm, groups, t, variances) if k == 1 else ({} if t == trials else None)
            if sd_at is None:
                continue
            need = noninferiority.tasks_to_show(arm, margin, len(arms), sd_at, alpha)
            if math.isfinite(need):
                plans.append((need * t, need, t, s))
    say = rec.sentences.append
    say(f"No decision yet: no strategy is shown to be within {rec.margin_pts:g} points of every other at {n_tasks} "
        f"tasks x {trials} trials, so none is recommended.")
    if not plans:
        say("These tasks cannot size it (too few to estimate a spread, or every strategy observed at least the "
            "margin below another); run more tasks to tell.")
        return
    for t in (trials, 2 * trials):
        at = [plan for plan in plans if plan[2] == t]
        if not at:
            continue
        _, need, _, s = min(at)
        more = max(0, int(need) - n_tasks)
        if t == trials:
            rec.more_tasks = more
        say(f"To settle it at {t} trials: about {int(need):,} tasks in all ({more:,} more than now) would show "
            f"whether {s} is within the margin, if the observed differences hold (80% power; new tasks, so the "
            f"between-task spread counts).")


def _sd_at(s: str, arm: noninferiority.Arm, groups: dict[str, pd.DataFrame], t: int,
           variances: dict[frozenset, power.Variance]) -> dict[str, float] | None:
    """sd of the per-task success difference at t trials per task, from the between-task and trial parts
    (analysis.power); None when one trial cannot tell them apart and t differs from the trials run."""
    out = {}
    for q in arm.pairs:
        pair = frozenset((s, q.other))
        if pair not in variances:
            variances[pair] = power.pair_variance(groups[s], groups[q.other])
        v = variances[pair]
        if not v.split and t != v.m:
            return None
        out[q.other] = math.sqrt(max(0.0, v.var_d(t)))
    return out


def _sortable(x: float) -> float:
    return math.inf if fmt.missing(x) else x


def _amortised(row: pd.Series) -> str:
    n = row.get("amortised_over")
    return "?" if fmt.missing(n) else f"{int(n):,}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m analysis.recommend", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="+", help="run directories (or results.jsonl files)")
    parser.add_argument("--k", type=int, default=1, help="rank on Pass^k (1 = success rate)")
    parser.add_argument("--by", default="tokens", choices=("tokens", "cost"), help="price per task in")
    parser.add_argument("--delta", type=float, default=5.0, help="the margin (points): how far below the best a cheaper strategy may be")
    parser.add_argument("--model", help="only models whose name contains this (e.g. simulated)")
    parser.add_argument("--amortise-over", type=int, metavar="N",
                        help="deployment tasks sharing the one-off build cost (default: episodes evaluated)")
    add_pool_option(parser)
    args = parser.parse_args(argv)
    from analysis.load import load_records

    try:
        records = load_records(args.runs, overlap="pool" if args.pool_runs else "refuse")
        if args.model and not records.empty:
            records = records[records["model"].astype(str).str.contains(args.model, regex=False)]
        if records.empty:
            raise ValueError("no records found" + (f" for a model matching {args.model!r}" if args.model else ""))
        if args.k < 1 or args.delta <= 0:
            raise ValueError("--k must be >= 1 and --delta > 0")
        recs = recommend(records, k=args.k, by=args.by, delta_pts=args.delta, amortise_over=args.amortise_over)
    except (FileNotFoundError, ValueError) as exc:
        print(f"memdeliv recommend: {exc}", file=sys.stderr)
        return 2
    if banner := fmt.simulated_banner(records["model"].dropna()):
        print(banner + "\n")
    for rec in recs:  # one sentence a paragraph, wrapped for a terminal
        print("\n".join(textwrap.fill(line, 110, subsequent_indent="  ") for line in rec.sentences) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
