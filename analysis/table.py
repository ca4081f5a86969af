"""`python -m analysis.table RUN_DIR... [--exclude LABEL] [--pool-runs]`: the per-strategy table printed at the end
of `make sweep`.

The essential columns, sized for a terminal (`--wide`: every column, the table `make tables` writes with its
files and plots).
"""

from __future__ import annotations

import sys

from analysis import fmt, sequential_run
from analysis.fmt import plain, simulated_banner, wrap
from analysis.runs import identity, task_sets
from analysis.runs.load import add_pool_option, load_for_command
from analysis.runs.named import runs_named
from analysis.statistics import infra
from analysis.statistics.metrics import infra_imbalance
from analysis.tables import exclusions, notes, summary_of, view_line
from analysis.views import orders, pulls
from analysis.views.displays import COMPACT_NOTE, compact_display, markdown, scenario_warnings, strategies_display

def main(argv: list[str] | None = None) -> int:
    parser = fmt.CommandParser("table", description=__doc__)
    parser.add_argument("runs", nargs="*", help="run directories or results.jsonl files")
    parser.add_argument("--exclude", action="append", default=[], metavar="LABEL",
                        help="leave this error label out of the rates (repeatable, e.g. infra; labelled non-default)")
    parser.add_argument("--amortise-over", type=int, metavar="N",
                        help="deployment tasks sharing the one-off memory-building cost (default: episodes evaluated)")
    parser.add_argument("--wide", action="store_true",
                        help="every column (prompt / cached / completion tokens, build cost, ...), as `make tables`")
    parser.add_argument("--short-legend", action="store_true",
                        help="a two-line legend that points to the full one (the end of `make sweep`)")
    add_pool_option(parser)
    identity.add_shared_tasks_option(parser)
    args = parser.parse_args(argv)
    if not runs_named("table", args.runs):
        return 2
    try:
        exclude = exclusions(args.exclude)
    except ValueError as exc:  # an unknown label
        fmt.refuse("table", exc)
        return 2
    if (loaded := load_for_command("table", args)) is None:
        return 2
    df, above = loaded
    if banner := simulated_banner(df["model"].dropna()):
        print(banner + "\n")
    summary = summary_of(df, exclude=exclude, amortise_over=args.amortise_over)
    lines = [f"Task set: {line}" for line in task_sets.labels(df)] + above + \
        [f"WARNING: {w}" for w in infra_imbalance(summary) + infra.all_infra_tasks(df)]
    lines += [f"Stopped early (sequential sweep, {run}): {text}" for run in args.runs
              if (text := sequential_run.stopped_text(run))]
    if not args.wide and summary[["benchmark", "split"]].drop_duplicates().shape[0] == 1:
        lines.insert(0, f"Benchmark: {summary['benchmark'].iloc[0]}/{summary['split'].iloc[0]}")
    table = markdown(strategies_display(summary)) if args.wide else plain(compact_display(summary))
    fit = (lambda text, indent="": text) if args.wide else wrap
    print(view_line(exclude) + "\n\n" + "".join(fit(f"- {line}", "  ") + "\n" for line in lines) + table)
    for line in scenario_warnings(summary):
        print(fit(line), file=sys.stderr)
    if pulled := pulls.terminal(df, exclude):  # beside a pulled strategy's success: did the agent pull at all
        print("\n" + pulled)
    if by_order := orders.terminal(df, exclude):
        print("\n" + by_order)
    legend = short_legend(args.runs) if args.short_legend else \
        notes(exclude) + ("" if args.wide else " " + COMPACT_NOTE)
    print("\n" + fit(legend, ""))
    return 0


def short_legend(runs: list[str]) -> str:
    """What every sweep ends with instead of the full legend, which `make table` prints (it is the same each time)."""
    return ("success: mean over tasks [95% CI], * under 20 tasks; errors: failed episodes per label, infra included; "
            "Δ vs none: paired, "
            "flagged when the paired test does not find it; tokens, memory, cost: per task. The full legend: "
            f"make table RUNS=\"{' '.join(runs)}\"")


if __name__ == "__main__":
    raise SystemExit(main())
