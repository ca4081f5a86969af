"""One cell's decision for `make recommend` (analysis.recommend): on the tasks x trials EVERY strategy ran (paired;
what only some ran is left out and said), which strategies are shown to be within the margin of every other
(analysis.statistics.noninferiority), what each costs per task exactly as the tables price it, and the sentences that
say so, or "No decision yet" with the tasks that would settle it (analysis.statistics.sizing)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from analysis import fmt
from analysis.runs.build_cost import add_build_cost
from analysis.runs.costs import ROLES, add_costs, called_roles, usd
from analysis.statistics import noninferiority, sizing
from analysis.statistics.metrics import GROUP, on_common_pairs, pass_hat_k_per_task, per_task_means, spent, \
    task_success, valid, with_assembly, with_tokens
from analysis.statistics.stats import MIN_TASKS
from harness.usage import column

ROLES_USD = tuple(col.removesuffix("/task") for col in ROLES.values())  # each role's record field


@dataclass
class Recommendation:
    benchmark: str
    split: str
    model: str
    assembly: str  # "" unless the runs varied placement / context policy / answer mode (metrics.CELL)
    k: int
    best: str  # the best observed rate (not a recommendation)
    choice: str | None  # None: no decision yet
    candidates: list[str]  # strategies shown non-inferior at the margin, best observed first
    per_task: dict[str, float]  # strategy -> price per task (tokens or USD) including amortised build
    margin_pts: float = 5.0
    rates: dict[str, float] = field(default_factory=dict)
    more_tasks: int | None = None  # with no decision: new tasks (at the trials run) that would settle it
    sentences: list[str] = field(default_factory=list)
    paired_tasks: int = 0  # the tasks every strategy ran: what the decision rests on
    paired_trials: int = 0
    unpriced: list[str] = field(default_factory=list)  # qualifying strategies whose price is unknown

    @property
    def decided(self) -> bool:
        return self.choice is not None

    @property
    def answer(self) -> str:
        return f"Recommended: {self.choice}" if self.decided else "No decision yet"


def per_task_metric(df: pd.DataFrame, k: int) -> pd.Series:
    return task_success(df) if k == 1 else pass_hat_k_per_task(df, k)


def shared_pairs(groups: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """Each strategy's records on the (task, trial) pairs that every strategy of the cell has."""
    return dict(zip(groups, on_common_pairs(*groups.values())))


def price_table(groups: dict[str, pd.DataFrame], amortise_over: int | None) -> pd.DataFrame:
    """Per strategy, the tables' own per-task figures (analysis.statistics.metrics, build_cost, costs) on these
    records."""
    rows = [{**{c: g[c].iloc[0] for c in GROUP}, "records": len(g), "success": g["success"].mean(),
             **per_task_means(g)} for g in groups.values()]
    records = pd.concat(groups.values())
    out = add_costs(add_build_cost(pd.DataFrame(rows), records, amortise_over), records)
    return out.set_index("strategy")


def _unknown_records(g: pd.DataFrame, by: str) -> int:
    """Records whose figure is not reported (cost: any role unpriced; tokens: no agent usage)."""
    used = spent(g)
    if by == "tokens":
        return int(used["tokens"].isna().sum()) if "tokens" in used else len(used)
    missing = np.zeros(len(used), dtype=bool)
    for col in ROLES_USD:
        if col in used:
            missing |= used[col].isna().to_numpy()
        elif col != "judge_cost_usd":  # as runs.costs: no judge field = no judge; no agent / user field = unknown
            missing[:] = True
    for role in called_roles(used):  # the strategy's own, an online learner's update, a plugin's
        calls, cost = column(role, "calls"), column(role, "cost")
        if calls in used and cost in used:
            missing |= (used[calls].notna() & used[cost].isna()).to_numpy()
    return int(missing.sum())


def _price(row: pd.Series, by: str) -> tuple[float, float, float]:
    """(price per task with the build amortised, to run, build per task); nan where unknown."""
    if by == "cost":
        base, build = row.get("usd/task"), row.get("build_cost/task")
    else:
        base, build = row.get("tokens/task"), row.get("build_tokens/task")
        base = base + (row.get("strategy_tokens/task") or 0.0) if not fmt.missing(base) else base
    base = math.nan if fmt.missing(base) else float(base)
    build = math.nan if fmt.missing(build) else float(build)
    return (base if math.isnan(build) else base + build), base, build


def _money(value: float, by: str) -> str:
    if fmt.missing(value):
        return "n/a"
    return usd(value) if by == "cost" else f"{value:,.0f} tokens"


def decide(key: tuple[str, str, str, str], cell: pd.DataFrame, k: int = 1, by: str = "tokens", delta_pts: float = 5.0,
           alpha: float = noninferiority.ALPHA, amortise_over: int | None = None,
           exclude: tuple[str, ...] = ()) -> Recommendation:
    ok = with_assembly(with_tokens(valid(cell, exclude)))
    whole = dict(tuple(ok.groupby("strategy", sort=False)))
    groups = shared_pairs(whole)
    n_tasks = int(pd.concat(groups.values())["task_id"].nunique())
    trials = min((int(g.groupby("task_id").size().min()) for g in groups.values() if len(g)), default=0)
    if n_tasks and trials < k:
        raise ValueError(f"{'/'.join(map(str, key))}: Pass^{k} needs >= {k} trials per task, have {trials}")
    margin, blocks = delta_pts / 100, max(1, trials // k)
    metric = {s: per_task_metric(g, k) for s, g in groups.items()}
    arms = noninferiority.assess(metric, margin, alpha, blocks)
    table = price_table({s: g for s, g in groups.items() if len(g)} or whole, amortise_over)
    prices = {s: _price(table.loc[s], by) if s in table.index else (math.nan,) * 3 for s in groups}
    rank = sorted(arms, key=lambda s: (-arms[s].rate if not math.isnan(arms[s].rate) else 1, _sortable(prices[s][0])))
    label = "success" if k == 1 else f"Pass^{k}"
    rec = Recommendation(*key, k=k, best=rank[0], choice=None, candidates=[s for s in rank if arms[s].shown],
                         per_task={s: p[0] for s, p in prices.items()}, margin_pts=delta_pts,
                         rates={s: arms[s].rate for s in rank}, paired_tasks=n_tasks, paired_trials=trials)
    say = rec.sentences.append
    say(_header(key, whole, groups, n_tasks, trials, label, delta_pts, alpha, len(arms), by))
    say(f"Observed {label} on them: " + ", ".join(f"{s} {fmt.pct(arms[s].rate)}" for s in rank) + ".")
    for s in rank:
        say(_verdict(arms[s], delta_pts))
    if not rec.candidates:
        _no_decision(rec, arms, groups, metric, k, trials, n_tasks, alpha)
        return rec
    priced = [s for s in rec.candidates if not math.isnan(prices[s][0])]
    rec.unpriced = [s for s in rec.candidates if s not in priced]
    if not priced:
        rec.choice = rec.candidates[0]
        say(f"No qualifying strategy has a {by} figure, so no strategy can be ranked on price; the qualifying strategy "
            f"with the best {label}, `{rec.choice}`, stands" + (" (try --by tokens)." if by == "cost" else "."))
        return rec
    rec.choice = min(priced, key=lambda s: (prices[s][0], -arms[s].rate))
    _recommended(rec, table.loc[rec.choice], prices, by)
    for s in rec.unpriced:
        say(f"Not ranked on price: `{s}` ({by if by == 'tokens' else 'USD'} not reported on "
            f"{_unknown_records(groups[s], by)} of {len(groups[s])} records), so it may be cheaper than "
            f"`{rec.choice}`.")
    if rec.choice != rec.best:
        q = next(q for q in arms[rec.choice].pairs if q.other == rec.best)
        say(f"`{rec.choice}` is {fmt.signed(100 * q.diff)} points from the best observed, `{rec.best}`, on these "
            f"{q.n} paired tasks; the test showed it at most {delta_pts:g} points below (95% lower bound "
            f"{fmt.signed(100 * q.lower)} > -{delta_pts:g}).")
    return rec


def _header(key: tuple, whole: dict, groups: dict, n_tasks: int, trials: int, label: str, delta_pts: float,
            alpha: float, k_arms: int, by: str) -> str:
    setting = f" ({key[3]})" if key[3] else ""
    left = [f"`{s}`'s {len(whole[s]) - len(groups[s])}" for s in whole if len(whole[s]) > len(groups[s])]
    left_out = (f" (left out: {', '.join(left)} other episode(s), which not every strategy ran)" if left else "")
    priced = ("tokens per task (the agent's calls and the strategy's own; the user simulator's and judge's are "
              "not counted)" if by == "tokens" else
              "USD per task (agent + user simulator + judge + the strategy's own calls: the tables' cost)")
    return (f"{fmt.model_label(key[2])} on {key[0]}/{key[1]}{setting}: the decision rests on {n_tasks} tasks x "
            f"{_trials(trials)} that every strategy ran, paired{left_out}. Ranked on {label}. Margin DELTA = "
            f"{delta_pts:g} points: a strategy qualifies only when one-sided paired tests over tasks show it is at "
            f"most {delta_pts:g} points below every other strategy (alpha = {alpha:g}, Holm-corrected over {k_arms} "
            f"strategies; at least {MIN_TASKS} paired tasks, and never less spread than 0/1 outcomes allow). "
            f"Priced by {priced}, with memory building amortised.")


def _recommended(rec: Recommendation, row: pd.Series, prices: dict, by: str) -> None:
    total, base, build = prices[rec.choice]
    one_off = row.get("build_tokens") if by == "tokens" else row.get("build_cost_usd")
    n = row.get("amortised_over")
    shown, n_priced = len(rec.candidates), len(rec.candidates) - len(rec.unpriced)
    why = ("the only strategy" if shown == 1 else f"the cheapest of {shown}" if not rec.unpriced else
           f"the only priced one of {shown}" if n_priced == 1 else
           f"the cheapest of the {n_priced} priced ones of {shown}")
    build_text = ("its build cost is unknown and not included" if math.isnan(build) else
                  f"+ {_money(one_off, by)} one-off amortised over "
                  f"{'?' if fmt.missing(n) else f'{int(n):,}'} task runs")
    rec.sentences.append(
        f"Recommended: {rec.choice}, {why} shown non-inferior at margin "
        f"{rec.margin_pts:g} points (at most {rec.margin_pts:g} points below every other): {_money(total, by)} per "
        f"task{'' if math.isnan(build) else ' including its build'} ({_money(base, by)} to run, as the tables "
        f"print it; {build_text}), so {_money(1000 * total, by)} per 1,000 tasks.")
    if by == "tokens":
        apart = [f"{name} {row.get(col):,.0f}" for name, col in (("user simulator", "user_tokens/task"),
                                                                  ("judge", "judge_tokens/task"))
                 if not fmt.missing(row.get(col)) and row.get(col)]
        own = row.get("strategy_tokens/task") or 0
        if apart or own:
            rec.sentences.append(f"Tokens per task counted for `{rec.choice}`: agent {row.get('tokens/task'):,.0f} + "
                                 f"the strategy's own calls {own:,.0f}" + (f"; not counted: {', '.join(apart)}."
                                                                           if apart else "."))


def _verdict(arm: noninferiority.Arm, delta_pts: float) -> str:
    q = arm.weakest
    if q is None:
        return f"{arm.strategy}: the only strategy in this cell."
    if q.too_few:
        return (f"{arm.strategy}: not tested (its comparison with `{q.other}` rests on {q.n} paired tasks, fewer than "
                f"the {MIN_TASKS} a decision needs).")
    p = fmt.pvalue(arm.p_holm)
    p = p.replace("<", "< ") if p.startswith("<") else "= " + p
    lower = "-inf" if math.isinf(q.lower) else f"{fmt.signed(100 * q.lower)}"
    against = f"closest call vs `{q.other}`: {fmt.signed(100 * q.diff)} pts, 95% lower bound {lower}"
    floor = ("; the tasks' differences barely varied, so the bound uses the least spread 0/1 outcomes allow"
             if q.floored else "")
    if arm.shown:
        return f"{arm.strategy}: non-inferior at margin {delta_pts:g} ({against} > -{delta_pts:g}; Holm p {p}{floor})."
    return (f"{arm.strategy}: not shown to be within {delta_pts:g} points of every other ({against}, needs > "
            f"-{delta_pts:g}; Holm p {p}{floor}).")


def _no_decision(rec: Recommendation, arms: dict, groups: dict, metric: dict, k: int, trials: int, n_tasks: int,
                 alpha: float) -> None:
    """"No decision yet", with the new tasks (x trials) that would settle it if the observed differences hold,
    and the range a bootstrap over these tasks gives."""
    say = rec.sentences.append
    if n_tasks < MIN_TASKS:
        say(f"No decision yet: the strategies share {n_tasks} paired tasks, fewer than the {MIN_TASKS} a decision "
            "needs (a handful of tasks near the ceiling or the floor looks certain when it is not), so no "
            "strategy is recommended.")
    else:
        say(f"No decision yet: no strategy is shown to be within {rec.margin_pts:g} points of every other at "
            f"{n_tasks} tasks x {_trials(trials)}, so no strategy is recommended.")
    plans = _plans(arms, groups, metric, k, trials, rec.margin_pts / 100, alpha) if n_tasks else []
    if not plans:
        say("These tasks cannot size it (no task that every strategy ran, or every strategy observed at least the "
            "margin below another); run more tasks to tell.")
        return
    for t, need, lo, hi, s in plans:
        more = max(0, int(need) - n_tasks)
        if t == trials:
            rec.more_tasks = more
        top = "unbounded" if math.isinf(hi) else f"{int(hi):,}"
        spread = "" if lo == hi == need else f"; a bootstrap over these tasks gives {int(lo):,}-{top}"
        say(f"To settle it at {_trials(t)}: about {int(need):,} tasks in all ({more:,} more than now{spread}) "
            f"would show whether `{s}` is within the margin, if the observed differences hold "
            f"(80% power; new tasks, so the between-task spread counts)." if math.isfinite(lo) else
            f"To settle it at {_trials(t)}: about {int(need):,} tasks in all ({more:,} more than now; but most "
            f"bootstrap draws over these tasks see no room within the margin, so treat it as a floor) would show "
            f"whether `{s}` is within the margin, if the observed differences hold (80% power).")


def _plans(arms: dict, groups: dict, metric: dict, k: int, trials: int, margin: float, alpha: float) -> list:
    """[(trials, tasks needed, bootstrap lo, hi, strategy)] at the trials run and (success) twice as many."""
    names = list(arms)
    parts = {}
    for i, s in enumerate(names):
        for j in names[:i]:
            if k == 1:
                parts[s, j] = sizing.parts(groups[s], groups[j])
            else:
                d = pd.concat([metric[s].rename("a"), metric[j].rename("b")], axis=1, join="inner").dropna()
                parts[s, j] = sizing.Parts(d.index, (d["a"] - d["b"]).to_numpy(float), None, trials)
    n = max((p.n for p in parts.values()), default=0)
    if not n:
        return []
    idx = sizing.resample(n)
    z = noninferiority.z_needed(len(names), alpha)
    out = []
    for t in ((trials, 2 * trials) if k == 1 else (trials,)):
        if any(p.w is None and t != p.m for p in parts.values()):
            continue  # one trial cannot tell how more trials would help
        need = {s: np.full(1 + len(idx), float(MIN_TASKS)) for s in names}
        for (s, j), p in parts.items():
            moments = [np.concatenate(pair) for pair in zip(sizing.moments(p), sizing.moments(p, idx))]
            sd = np.sqrt(sizing.var_at(moments[1], moments[2], p.m, t))
            for a, sign in ((s, 1), (j, -1)):
                need[a] = np.maximum(need[a], noninferiority.tasks_for(sign * moments[0] + margin, sd, z, margin,
                                                                       max(1, t // k)))
        best = min(names, key=lambda s: need[s][0])
        if math.isfinite(need[best][0]):
            lo, hi = sizing.span(np.min([need[s][1:] for s in names], axis=0))
            out.append((t, need[best][0], lo, hi, best))
    return out


def _trials(t: int) -> str:
    return f"{t} trial" + ("" if t == 1 else "s")


def _sortable(x: float) -> float:
    return math.inf if fmt.missing(x) else x
