"""`python -m analysis.plan --facts FILE --strategies a,b [--pilot RUN] [--run RUN] [--delta D]` (`make plan`):
what a sweep will cost, and whether it can decide, before anything runs. Nothing here calls a model.

Per cell (strategy) it prints the episodes still to run (tasks x trials, minus those already recorded in `--run`,
as a resumed sweep would skip them), the expected tokens (agent prompt / cached / completion, user simulator,
judge) and their USD, priced by memory_kit/prices.py (LiteLLM's bundled map or the config's
`price_per_mtok_*`; an unpriced model says `unpriced`, never $0). The token estimate comes from:

* a PILOT (`--pilot runs/<run>`, records of this model): per episode its steps, non-memory prompt tokens,
  completion, cached share, user simulator and judge tokens (the same strategy's cell when the pilot ran it, else
  the pilot's mean over its cells), plus steps x the planned memory block's tokens per step (the pilot's own when
  it delivered the same artifact with the same strategy, else counted from the artifact);
* else the PRIOR (PRIORS below, measured on τ² with the scripted oracle; docs/cost.md): steps from each task's
  gold-action count, a per-step prompt that grows with the conversation, the memory block counted exactly
  from the artifact, stated with a factor-2 band.

The facts file (tasks, gold actions, model and judge names, price overrides) comes from `python -m
harness.plan_facts`, so this module imports no harness code beyond the row's plain definitions (harness/row.py,
the one reader of results.jsonl: what a resumed sweep would skip). With `--delta D` (needs a pilot that ran
`none` and another strategy) it sizes the decision as `make power` does (analysis.power: new tasks needed for D points
at 80% power, from the pilot's variance) and prices it.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import pandas as pd

from analysis import fmt, power
from analysis.statistics.metrics import BASELINE, INFRA, valid
from harness.row import RESULTS, latest_per_episode, read_rows  # the row and its one reader (plain definitions)
from strategies.registry import job_memory
from memory_kit.prices import Price, fmt_usd, price_of
from analysis.planning import sequential_plan
from analysis.planning.plan_estimate import (EXTRACT_PER_TASK, PRIOR_BAND, Episode, PlanError, base_name,
                                             memory_block_tokens, pilot_episode, prior_episode, usd)

# ---------------------------------------------------------------------------------------------- resume, pilot


def recorded_episodes(run_dir: Optional[str], facts: dict[str, Any]) -> dict[str, set[tuple[str, int]]]:
    """Per strategy of this benchmark, split and model: the (task, trial) pairs a resumed sweep would skip
    (recorded, latest attempt not infra), from one read of the run's results.jsonl."""
    rows: dict[str, list] = {}
    cell = (facts["benchmark"], facts["split"], facts["model"]["name"])
    for _, row in read_rows(Path(run_dir) / RESULTS, lambda *_: None) if run_dir else []:  # a bad line: reruns
        if (row.get("benchmark"), row.get("split"), row.get("model")) == cell:
            rows.setdefault(str(row.get("strategy")), []).append(row)
    return {strategy: {k for k, r in latest_per_episode(own)[0].items() if r.get("error") != INFRA}
            for strategy, own in rows.items()}  # latest: the attempt that counts, as the runner's resume picks it


def load_pilot(path: str, facts: dict[str, Any]) -> pd.DataFrame:
    from analysis.runs.load import load_records

    records = load_records([path])
    if records.empty:
        raise PlanError(f"--pilot {path}: no records")
    records = records[records["error"] != INFRA]  # an infra episode's usage is partial
    same = records[records["benchmark"] == facts["benchmark"]]
    if same.empty:
        raise PlanError(f"--pilot {path}: no records of {facts['benchmark']} (it has "
                        f"{', '.join(sorted(set(records['benchmark'])))})")
    return same


# ---------------------------------------------------------------------------------------------- the plan


@dataclass
class Cell:
    strategy: str
    episodes: int
    total: int
    episode: Episode
    block: float
    block_note: str
    usd: dict[str, float] = field(default_factory=dict)

    def tokens(self, key: str) -> float:
        return self.episodes * self.episode.tokens[key]

    def cost(self) -> float:
        return self.episodes * sum(self.usd.values())


def plan(facts: dict[str, Any], strategies: list[str], trials: int, pilot: Optional[pd.DataFrame] = None,
         run_dir: Optional[str] = None, memory: Optional[str] = None) -> tuple[list[Cell], dict[str, Any]]:
    m = facts["model"]
    agent = price_of(m["name"], m)
    user = agent if not m.get("user_name") or m["user_name"] == m["name"] else price_of(m["user_name"])
    judge_name = facts.get("judge_model")
    judge = price_of(judge_name) if judge_name else None
    memory = memory if memory is not None else facts.get("memory")
    cached_price = agent is not None and agent.cached < agent.input
    gold = [facts["gold_actions"].get(t) for t in facts["tasks"]]
    cells, recorded = [], recorded_episodes(run_dir, facts)
    for strategy in strategies:
        table = facts.get("memory_by_strategy") or {}
        own = job_memory(strategy, facts.get("strategy_options") or {}, table, memory)  # as JobSettings.job_memory
        block, note = memory_block_tokens(strategy, own, m["name"], facts.get("strategy_options") or {})
        if pilot is not None:
            episode = pilot_episode(pilot, strategy, memory, block, facts)
        else:
            episode = prior_episode(facts["benchmark"], gold, block, int(facts["max_steps"]), cached_price,
                                    bool(facts.get("needs_judge")))
        done = recorded.get(strategy, set())
        planned = {(t, k) for t in facts["tasks"] for k in range(trials * orders_of(strategy, facts))}
        cell = Cell(strategy, len(planned - done), len(planned), episode, block, note)
        cell.usd = usd(episode.tokens, agent, user, judge)
        cells.append(cell)
    prices = {"agent": agent, "user": user, "judge": judge, "judge_name": judge_name}
    return cells, prices


def orders_of(strategy: str, facts: dict[str, Any]) -> int:
    """The task orders a strategy's job runs (`benchmark.orders`: an online learner's, else 1), as the runner's
    Job.orders."""
    orders = int(facts.get("orders") or 1)
    if orders == 1:
        return 1
    from strategies import learns_online

    return orders if learns_online(base_name(strategy), dict(facts.get("strategy_options") or {})) else 1


def build_estimate(facts: dict[str, Any], cells: list[Cell], prices: dict[str, Any],
                   memory: Optional[str]) -> Optional[dict[str, float]]:
    """`make memory` on train when the artifact is not there yet: a `none` episode per train task (the plan's
    own none estimate) plus the extraction calls (EXTRACT_PER_TASK)."""
    if not memory or Path(memory).is_file() or not facts.get("train_tasks"):
        return None
    n = int(facts["train_tasks"])
    none = next((c for c in cells if c.strategy == BASELINE), cells[0])
    episode_usd = none.usd["agent"] + none.usd["user"]
    agent = prices["agent"]
    extract = agent.cost(EXTRACT_PER_TASK["prompt"], EXTRACT_PER_TASK["completion"]) if agent else float("nan")
    episode = none.episode.tokens
    tokens = n * (episode["prompt"] + episode["completion"] + episode["user_prompt"] + episode["user_completion"]
                  + EXTRACT_PER_TASK["prompt"] + EXTRACT_PER_TASK["completion"])
    return {"tasks": n, "tokens": tokens, "usd": n * (episode_usd + extract)}


def decision(pilot: pd.DataFrame, strategies: list[str], trials: int,
             delta_pts: float) -> tuple[Optional[int], list[str]]:
    """New tasks needed so every planned strategy's difference from `none` is decided at DELTA points with 80%
    power at `trials` trials (analysis.power, from the pilot's variance); lines say which pair needs most."""
    ok = valid(pilot)
    ok = ok.assign(strategy=ok["strategy"].map(base_name))
    base = ok[ok["strategy"] == BASELINE]
    if base.empty:
        return None, ["--delta needs a pilot that ran `none`: the variance is of differences from it"]
    need, lines = 0, []
    for s in strategies:
        if s == BASELINE:
            continue
        mine = ok[ok["strategy"] == s]
        if mine.empty:
            lines.append(f"{s}: not in the pilot, so its variance is unknown (not counted)")
            continue
        v = power.pair_variance(mine, base)
        n = v.tasks_needed(delta_pts / 100, trials)
        lines.append(f"{s} vs none: {n} tasks × {trials} trials (pilot: Δ {fmt.signed(100 * v.delta)} pts on "
                     f"{v.n} tasks, sd of the per-task difference {math.sqrt(v.var_d(trials)):.2f})")
        need = max(need, n)
    return (need or None), lines


# ---------------------------------------------------------------------------------------------- display


def display(cells: list[Cell]) -> pd.DataFrame:
    rows = []
    for c in cells:
        lo, hi = c.episode.band
        total = c.cost()
        rows.append({"strategy": c.strategy, "episodes": f"{c.episodes}/{c.total}",
                     "memory/step": fmt.kilo(c.block),
                     "prompt": fmt.kilo(c.tokens("prompt")), "cached": fmt.kilo(c.tokens("cached")),
                     "completion": fmt.kilo(c.tokens("completion")),
                     "user": fmt.kilo(c.tokens("user_prompt") + c.tokens("user_completion")),
                     "judge": fmt.kilo(c.tokens("judge_prompt") + c.tokens("judge_completion")),
                     "USD agent": fmt_usd(c.episodes * c.usd["agent"]), "USD user": fmt_usd(c.episodes * c.usd["user"]),
                     "USD judge": fmt_usd(c.episodes * c.usd["judge"]),
                     "USD": fmt_usd(total) + (f" [{fmt_usd(total * lo)}–{fmt_usd(total * hi)}]"
                                              if hi != 1 and total == total else "")})
    return pd.DataFrame(rows)


def source_lines(cells: list[Cell]) -> list[str]:
    """Where each cell's tokens come from, below the table (a column of it would pass 160 columns)."""
    by_source: dict[str, list[str]] = {}
    for c in cells:
        by_source.setdefault(c.episode.source, []).append(c.strategy)
    if len(by_source) == 1:
        return [f"tokens per episode from: {next(iter(by_source))}"]
    return [f"tokens per episode of {', '.join(strategies)} from: {source}"
            for source, strategies in by_source.items()]


def price_line(role: str, name: Optional[str], price: Optional[Price]) -> str:
    if not name:
        return f"{role}: none"
    return f"{role} {name}: " + (f"{price.per_mtok()} ({price.source})" if price else
                                 "unpriced (LiteLLM has no price; set model.price_per_mtok_in/out)")


def report(facts: dict[str, Any], cells: list[Cell], prices: dict[str, Any], trials: int,
           pilot: Optional[pd.DataFrame], delta: Optional[float], memory: Optional[str]) -> str:
    m = facts["model"]
    orders = int(facts.get("orders") or 1)
    lines = [f"Plan: {facts['benchmark']}/{facts['split']}, {len(facts['tasks'])} tasks × {trials} trials"
             f"{f' (× {orders} task orders for an online learner)' if orders > 1 else ''}, "
             f"model {m['name']} (nothing has run; no model was called)",
             price_line("agent", m["name"], prices["agent"]),
             price_line("user simulator", m.get("user_name") or m["name"], prices["user"]),
             price_line("judge", prices["judge_name"], prices["judge"]), "",
             fmt.plain(display(cells)), *source_lines(cells), ""]
    total = sum(c.cost() for c in cells)
    band = cells[0].episode.band if cells else (1, 1)
    episodes = sum(c.episodes for c in cells)
    built = build_estimate(facts, cells, prices, memory)
    if built:
        lines.append(f"memory building (artifact {memory} does not exist yet: `make memory` on train, "
                     f"{built['tasks']} tasks): about {fmt.kilo(built['tokens'])} tokens, {fmt_usd(built['usd'])}")
        total += built["usd"]
    spread = f" [{fmt_usd(total * band[0])}–{fmt_usd(total * band[1])}]" if band[1] != 1 and total == total else ""
    lines.append(f"total: {episodes} episodes to run, {fmt_usd(total)}{spread}"
                 + ("" if pilot is not None else f" (prior: within a factor {PRIOR_BAND:g}; a pilot run narrows it)"))
    if delta is not None:
        lines.append("")
        if pilot is None:
            lines.append(f"DELTA={delta:g}: needs PILOT=runs/<run> (the variance comes from a pilot)")
        else:
            need, why = decision(pilot, [c.strategy for c in cells], trials, delta)
            lines += [f"  {w}" for w in why]
            if need:
                per_task = sum(sum(c.usd.values()) for c in cells) * trials
                lines.append(f"To decide at margin {delta:g} points: {need} tasks × {trials} trials "
                             f"= {need * trials * len(cells)} episodes over {len(cells)} strategies, "
                             f"{fmt_usd(need * per_task)}"
                             + (f" (this benchmark split has {len(facts['tasks'])} tasks selected; fewer than "
                                "needed: more trials or a larger margin)" if need > len(facts["tasks"]) else ""))
    return fmt.wrap("\n".join(lines))


def main(argv: Optional[list[str]] = None) -> int:
    parser = fmt.CommandParser("plan", description=__doc__.splitlines()[0])
    parser.add_argument("--facts", required=True, help="written by `python -m harness.plan_facts`")
    parser.add_argument("--strategies", required=True, help="comma list")
    parser.add_argument("--trials", type=int, default=None, help="default: the facts' benchmark.trials")
    parser.add_argument("--pilot", default=None, help="a run directory of this model: measured tokens")
    parser.add_argument("--run", default=None, help="a run directory to resume: its recorded episodes are skipped")
    parser.add_argument("--delta", type=fmt.margin_points, default=None,
                        help="margin in points: tasks x trials to decide")
    parser.add_argument("--memory", default=None, help="memory artifact (default: the facts' memory)")
    parser.add_argument("--sequential", type=int, default=None, metavar="WAVE",
                        help="price a sequential sweep (UNTIL=decided) in waves of WAVE tasks beside the fixed one")
    args = parser.parse_args(argv)
    try:
        facts = json.loads(Path(args.facts).read_text(encoding="utf-8"))
        trials = args.trials or int(facts.get("trials") or 1)
        if trials < 1:
            raise PlanError(f"--trials must be >= 1, got {trials}")
        if args.pilot and not Path(args.pilot).is_dir():
            raise PlanError(f"--pilot {args.pilot}: no such run directory")
        pilot = load_pilot(args.pilot, facts) if args.pilot else None
        strategies = [s for s in args.strategies.split(",") if s]
        memory = args.memory or facts.get("memory")
        cells, prices = plan(facts, strategies, trials, pilot, args.run, memory)
    except (PlanError, OSError, ValueError) as exc:
        fmt.refuse("plan", exc)
        return 2
    print(report(facts, cells, prices, trials, pilot, args.delta, memory))
    if args.sequential:
        wave = max(1, args.sequential)
        print(fmt.wrap("\n".join(sequential_plan.lines(
            strategies, len(facts["tasks"]), trials, wave, args.delta or 5.0, sum(c.episodes for c in cells),
            sum(c.cost() for c in cells), pilot))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
