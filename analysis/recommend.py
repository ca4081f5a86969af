"""`python -m analysis.recommend RUN_DIR... [--k K] [--by tokens|cost] [--delta D]` (`make recommend`): what to deploy.

Per (benchmark, split, model): on the tasks x trials every strategy ran (paired; the size is printed), a strategy
qualifies when it is *shown* to be at most DELTA points below every other strategy on the ranked metric (success
or Pass^K), by one-sided task-paired tests valid for 0/1 outcomes, Holm-corrected over the strategies
(analysis.statistics.noninferiority), on at least 20 paired tasks. The recommendation is the cheapest qualifying
strategy (its sentence says why: "the only strategy shown non-inferior", or "the cheapest of N shown non-inferior"), by
tokens (the agent's and the strategy's own calls) or by cost per task (the tables' USD: every role), with the
one-off cost of building its memory amortised in (analysis.runs.build_cost); a strategy whose price is unknown is
named, never called the cheapest. When no strategy qualifies the answer is "No decision yet", never a strategy
name, with how many tasks (x trials) would settle it and the range a bootstrap over the tasks gives. When the
strategies' infra-error rates differ it says whether the answer holds with infra counted as failures (the
default) and with infra excluded. Strategies that ran on different task sets are refused (exit 2) unless
--shared-tasks. It says why in plain sentences (docs/deciding.md). Control arms (placebo, protocol_only) are never
candidates: their content / length / instruction decomposition is one more sentence (analysis.views.controls).
"""

from __future__ import annotations

import argparse
import textwrap
from pathlib import Path

import pandas as pd

from analysis import fmt, power, sequential_run
from analysis.decision import Recommendation, decide
from analysis.runs import identity
from analysis.runs.load import add_pool_option
from analysis.runs.named import runs_named
from analysis.statistics import harm, infra, stats
from analysis.statistics.metrics import BASELINE, CELL, INFRA, on_common_pairs, valid, with_assembly
from analysis.statistics.verdict import SHOWN
from analysis.views import controls


def recommend(records: pd.DataFrame, k: int = 1, by: str = "tokens", delta_pts: float = 5.0,
              amortise_over: int | None = None, alpha: float = stats.ALPHA,
              shared_tasks: bool = False) -> list[Recommendation]:
    """One Recommendation per (benchmark, split, model, assembly); TaskSetsDiffer (a ValueError) when its
    strategies ran on different task sets, unless `shared_tasks`."""
    if by not in ("tokens", "cost"):
        raise ValueError(f"--by must be tokens or cost, not {by!r}")
    records, notes = identity.comparable(with_assembly(records), shared=shared_tasks)
    out = []
    for key, whole in records.groupby(CELL, sort=False, dropna=False):
        cell = whole[~controls.is_control(whole)]  # a control arm measures memory's parts; it is never deployed
        if cell.empty:
            raise ValueError(f"{'/'.join(map(str, key))}: only control arms ({', '.join(controls.arms(whole))}): "
                             "nothing to recommend")
        rec = decide(key, cell, k, by, delta_pts, alpha, amortise_over)
        if key in notes:
            rec.sentences.insert(0, notes[key] + ".")
        if line := infra.differ_line(cell):
            other = decide(key, cell, k, by, delta_pts, alpha, amortise_over, exclude=(INFRA,))
            rec.sentences.append(line + " " + _conventions(rec, other))
        if harmed := harm_line(cell, rec.choice):  # tasks none solved that the choice harmed (issue 28)
            rec.sentences.append(harmed)
        if parts := controls.sentence(whole):  # content / length / instruction (docs/controls.md)
            rec.sentences.append(parts)
        out.append(rec)
    return out


def harm_line(cell: pd.DataFrame, choice: str | None, exclude: tuple[str, ...] = ()) -> str | None:
    """The `Harm:` sentence when the recommended strategy harmed tasks `none` solved (count and ids), whatever its
    mean, with the verdict the tables print for it against `none` (analysis.statistics.verdict); None when it harmed
    none, or is `none`, or the cell has no `none`."""
    ok = valid(cell, exclude)
    if choice is None or choice == BASELINE or not (ok["strategy"] == BASELINE).any():
        return None
    mine, base = on_common_pairs(ok[ok["strategy"] == choice], ok[ok["strategy"] == BASELINE])
    e = harm.compare(mine, base, strategy=choice)
    if not e.harmed:
        return None
    v = power.of_pair(mine, base)
    mean = (f"shown {v.direction}" if v.kind == SHOWN else v.kind) + (f", {v.band_words()}" if v.band_words() else "")
    reading, trials = v.reconciling(), f"{e.trials} trial" + ("" if e.trials == 1 else "s")
    return (f"Harm: `{choice}` harmed {len(e.harmed)} of {e.tasks} tasks that `none` solved ({', '.join(e.harmed)}), "
            f"by the per-task rule of docs/robustness.md; trial noise alone would list about {e.chance:.1f} at "
            f"{trials}: {'harm is concentrated' if v.concentrated else 'within chance'}. Against `none` its "
            f"mean Δ is {fmt.signed(v.delta_pts)} points ({mean})" + (f"; {reading}" if reading else "") +
            ". Look at them (make tables: task_effects.md) before deploying.")


def _conventions(default: Recommendation, excluded: Recommendation) -> str:
    if default.answer == excluded.answer:
        return (f"The answer holds under both conventions: with infra counted as failures (the default) and with "
                f"infra excluded it is {default.answer}.")
    return (f"The answer does NOT hold under both conventions: with infra counted as failures (the default) it is "
            f"{default.answer}; with infra excluded it is {excluded.answer}. Which to trust depends on whether the "
            "strategy caused them: read their error_detail (make view).")


def main(argv: list[str] | None = None) -> int:
    parser = fmt.CommandParser("recommend", prog="python -m analysis.recommend", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="*", help="run directories (or results.jsonl files)")
    parser.add_argument("--k", type=int, default=1, help="rank on Pass^k (1 = success rate)")
    parser.add_argument("--by", default="tokens", choices=("tokens", "cost"), help="price per task in")
    parser.add_argument("--delta", type=fmt.margin_points, default=5.0,
                        help="the margin (points): how far below the best a cheaper strategy may be")
    parser.add_argument("--model", help="only models whose name contains this (e.g. simulated)")
    parser.add_argument("--amortise-over", type=int, metavar="N",
                        help="deployment tasks sharing the one-off build cost (default: episodes evaluated)")
    add_pool_option(parser)
    identity.add_shared_tasks_option(parser)
    args = parser.parse_args(argv)
    if not runs_named("recommend", args.runs):
        return 2
    from analysis.runs.load import load_records

    if any(sequential_run.read(run) for run in args.runs if Path(run).is_dir()):
        return sequential_main(args.runs, args.model, args.delta, args.k)
    try:
        records = load_records(args.runs, overlap="pool" if args.pool_runs else "refuse")
        if args.model and not records.empty:
            records = records[records["model"].astype(str).str.contains(args.model, regex=False)]
        if records.empty:
            raise ValueError("no records found" + (f" for a model matching {args.model!r}" if args.model else ""))
        if args.k < 1 or args.delta <= 0:
            raise ValueError("--k must be >= 1 and --delta > 0")
        recs = recommend(records, k=args.k, by=args.by, delta_pts=args.delta, amortise_over=args.amortise_over,
                         shared_tasks=args.shared_tasks)
    except (FileNotFoundError, ValueError) as exc:
        fmt.refuse("recommend", exc)
        return 2
    if banner := fmt.simulated_banner(records["model"].dropna()):
        print(banner + "\n")
    for line in identity.memory_lines(records):
        print(f"Memory: {line}")
    for rec in recs:  # one sentence a paragraph, wrapped for a terminal
        print("\n".join(textwrap.fill(line, 110, subsequent_indent="  ", break_on_hyphens=False)
                        for line in rec.sentences) + "\n")
    return 0


def sequential_main(runs: list[str], model: str | None, delta_pts: float = 5.0, k: int = 1) -> int:
    """A sequential sweep's run (looks.jsonl): the looks it took by the sequential boundary, never the fixed-size
    test on what the looks left (docs/deciding.md "Stopping early")."""
    from analysis.runs.load import load_records

    if len(runs) > 1:
        fmt.refuse("recommend", ValueError("a sequential run is decided by its own looks: give it alone"))
        return 2
    design, wave, delta, looks = sequential_run.read(runs[0])  # type: ignore[misc]  # read() found it above
    records = load_records(runs)
    if model:
        records = records[records["model"].astype(str).str.contains(model, regex=False)]
    if banner := fmt.simulated_banner(records["model"].dropna()):
        print(banner + "\n")
    if delta_pts != delta or k != 1:  # the boundary was fixed before the first look
        print(fmt.wrap(f"Note: --delta {delta_pts:g} / --k {k} not applied: a sequential run is decided on success at "
                       f"the margin its sweep fixed before the first look, {delta:g} points.") + "\n")
    ran = sequential_run.episodes(records, design)
    print("\n".join(textwrap.fill(line, 110, subsequent_indent="  ", break_on_hyphens=False)
                    for line in sequential_run.lines(design, wave, delta, looks, ran)) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
