"""`python -m analysis.tables RUN_DIR... [--experiment NAME] [--exclude LABEL]` (`make tables`): tables + plots
into <run>/analysis/.

Writes, for the records under the given run directories:
    strategies.md/.csv  per (benchmark, split, model, strategy): rates with 95% CIs, Pass^k, TGC/SGC, tokens,
                        steps, cost per task, Δ vs none, error counts per label (`errors`)
    models.md/.csv      IBM's shape: model, none, best, best strategy, Δ with paired CI and p, tokens none → best
    pairs.md/.csv       every pair of strategies on the same tasks (paired bootstrap CI, McNemar / sign-flip p)
    controls.md         with control arms: content / length / instruction effects, paired (analysis.views.controls)
    ibm_<view>.md/.csv  with --experiment: IBM's published rows beside ours
    *.png / *.svg       plots (see analysis.views.plots)
and prints the strategies table (and the IBM view). By default every record counts and an infra error is a failed
trial (tau2-bench's leaderboard convention). `--exclude LABEL` (repeatable; e.g. `--exclude infra`) leaves
records with that error out of the rates: a non-default view, named in the first line above every table.
`--pool-runs` counts runs that hold the same episodes as extra trials (analysis.runs.load; refused without it).
Strategies that ran on different task sets are refused (exit 2) unless `--shared-tasks` (analysis.runs.identity); a
strategy run with two memory artifacts is two rows. Tasks whose every trial was infra are listed above the table.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import pandas as pd

from analysis import fmt, power, task_effects
from analysis.runs import identity, task_sets
from analysis.runs.build_cost import add_build_cost
from analysis.runs.costs import add_costs
from analysis.runs.load import add_pool_option, load_compared, load_memory_history, steps_frame
from analysis.runs.named import runs_named
from analysis.statistics import infra, stats
from analysis.statistics.metrics import EXCLUDED, GROUP, INFRA, infra_imbalance, paired_comparisons, summarize
from analysis.views import controls, ibm, orders, plots, pulls
from analysis.views.compare import model_table
from analysis.views.displays import (COMPACT_NOTE, compact_display, markdown, models_display, pairs_display,
                               scenario_warnings, strategies_display)

FEW = (f"* = fewer than {stats.MIN_TASKS} tasks: CI too wide to rank strategies. Δ vs none not found by the paired "
       f"test (McNemar / sign-flip): within noise = inside the pair's A/A band, underpowered = outside it (one "
       f"trial: |Δ| below the minimum detectable Δ at 80% power; make power). make recommend's non-inferiority "
       f"test answers another question.")


def view_line(exclude: tuple[str, ...] = EXCLUDED) -> str:
    """The first line above every table: which records the rates count."""
    others = [label for label in exclude if label != INFRA]
    if INFRA in exclude:
        return f"Rates: EXCLUDING {', '.join([INFRA, *others])} errors (non-default view)"
    line = "Rates: infra errors counted as failures (tau2-bench leaderboard convention)"
    return line + (f"; EXCLUDING {', '.join(others)} errors (non-default view)" if others else "")


def notes(exclude: tuple[str, ...] = EXCLUDED) -> str:
    """The footnote of every table; a non-default exclusion is stated first, so no reader misses it."""
    extra = [label for label in exclude if label not in EXCLUDED]
    head = (f"NON-DEFAULT: rates exclude {', '.join(extra)} (--exclude); by default every record counts and "
            "infra errors are failed trials. ") if extra else ""
    return (head + "Rates: mean over tasks, [95% bootstrap CI over tasks]. n/a = not reported by the provider "
            "(cached tokens) or not priced by LiteLLM (cost). errors = records per error label (ctx = "
            "context_overflow, user = user_simulator); every error is a failed episode"
            + (", except the --exclude labels, which are left out of rates" if extra else
               ", infra included (tau2-bench's leaderboard convention)") + ". Δ vs none is paired on the "
            "(task, trial) pairs both strategies have ('on N pairs' when fewer than the row's records). SGC: over "
            "complete scenarios only (every task recorded without an excluded error); "
            "`scenarios` = complete (+ incomplete). " + FEW)


NOTES = notes()


@dataclass
class Analysis:
    records: pd.DataFrame
    summary: pd.DataFrame
    pairs: pd.DataFrame
    models: pd.DataFrame
    steps: pd.DataFrame
    history: pd.DataFrame
    views: dict[str, pd.DataFrame] = field(default_factory=dict)
    labels: list[str] = field(default_factory=list)  # which τ² task set / user simulator made the records
    identity: list[str] = field(default_factory=list)  # memory artifact ids, task sets compared on shared ids
    warnings: list[str] = field(default_factory=list)
    exclude: tuple[str, ...] = EXCLUDED

    @property
    def notes(self) -> str:
        return notes(self.exclude)

    @cached_property
    def per_task(self) -> tuple[list, pd.DataFrame]:
        """Helped / harmed tasks vs none and the A/A noise floor (analysis.task_effects), computed once for
        the files, the terminal and the report."""
        return task_effects.computed(self)


def summary_of(records: pd.DataFrame, n_boot: int = stats.N_BOOT, exclude: tuple[str, ...] = EXCLUDED,
               amortise_over: int | None = None) -> pd.DataFrame:
    """The strategies table's rows. The compact and wide tables, `make tables` and `make recommend BY=cost`
    print these same figures for the same cell."""
    summary = power.flag_underpowered(summarize(records, n_boot=n_boot, exclude=exclude), records, exclude)
    summary = add_build_cost(summary, records, amortise_over)
    summary = add_costs(summary, records)  # USD per task / per success, by role; budget-stopped rows
    return add_learning_counts(summary, records)


def analyse(paths: list[str], experiment: str | None = None, n_boot: int = stats.N_BOOT,
            models: dict[str, str] | None = None, exclude: tuple[str, ...] = EXCLUDED,
            amortise_over: int | None = None, pool_runs: bool = False, shared_tasks: bool = False) -> Analysis:
    records, lines = load_compared(paths, pool_runs, shared_tasks)
    if records.empty:
        raise SystemExit(f"no records found under {', '.join(map(str, paths))}")
    summary = controls.mark(summary_of(records, n_boot, exclude, amortise_over), records)
    pairs = paired_comparisons(records, n_boot=n_boot, exclude=exclude)
    result = Analysis(records, summary, pairs, model_table(summary, pairs), steps_frame(records),
                      load_memory_history(sorted(set(records["run_dir"]))), exclude=tuple(exclude))
    result.labels, result.identity = task_sets.labels(records), lines
    if experiment:
        block = ibm.experiment_analysis(experiment)
        if block["view"]:  # view: null = no published rows to add (e.g. +experiment=assembly)
            result.views[block["view"]] = ibm.view(experiment, summary, models=models, records=records)
        result.warnings = task_sets.warnings(records, block.get("task_set"))
    result.warnings += infra_imbalance(summary) + infra.all_infra_tasks(records)
    return result


def add_learning_counts(summary: pd.DataFrame, records: pd.DataFrame) -> pd.DataFrame:
    """ACE's records, summed per row: steps that cited a bullet (0 = counters that never move) and online
    updates lost after retries; absent ('-') for strategies that record neither."""
    out = summary.copy()
    for col, name in (("cited_steps", "cited steps"), ("update_lost", "updates lost")):
        if col in records:
            sums = records.groupby(GROUP, dropna=False)[col].agg(
                lambda v: int(v.fillna(0).astype(int).sum()) if v.notna().any() else None)
            out[name] = [sums.get(tuple(r[k] for k in GROUP)) for _, r in out.iterrows()]
    return out


def header(result: Analysis) -> str:
    """Which view the rates are (first line), task-set labels and warnings, shown above every table."""
    lines = [f"Task set: {line}" for line in result.labels] + result.identity + \
        [f"WARNING: {w}" for w in result.warnings]
    return view_line(result.exclude) + "\n\n" + ("\n".join(f"- {line}" for line in lines) + "\n\n" if lines else "")


def models_terminal(models: pd.DataFrame) -> str:
    """The models table narrowed for a terminal: tasks × trials in one column, a tie's rule as a numbered note."""
    if models.empty:
        return ""
    rules = [r if isinstance(r, str) and r else "" for r in models.get("best_rule", pd.Series("", models.index))]
    notes = list(dict.fromkeys(r for r in rules if r))
    shown = fmt.drop_constant(models_display(models.assign(best_rule="")))
    shown.insert(list(shown.columns).index("tasks"), "tasks×k", shown["tasks"].astype(str) + "×" +
                 shown["trials"].astype(str))
    shown["best strategy"] = [b + (f" [{notes.index(r) + 1}]" if r else "") for b, r in zip(shown["best strategy"],
                                                                                           rules)]
    return fmt.plain(shown.drop(columns=["tasks", "trials"])) + "".join("\n" + fmt.wrap(f"[{i}] {n}", "    ")
                                                                   for i, n in enumerate(notes, 1))


def write(result: Analysis, out_dir: Path, plot: bool = True) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    tables = {"strategies": (strategies_display(result.summary), result.summary),
              "models": (models_display(result.models), result.models),
              "pairs": (pairs_display(result.pairs), result.pairs)}
    tables |= {name: (v, v) for name, v in result.views.items()}
    for name, (shown, raw) in tables.items():
        (out_dir / f"{name}.md").write_text(header(result) + markdown(shown) + "\n\n" + result.notes + "\n",
                                            encoding="utf-8")
        raw.to_csv(out_dir / f"{name}.csv", index=False)
        written += [out_dir / f"{name}.md", out_dir / f"{name}.csv"]
    written += task_effects.write(result, out_dir)  # helped / harmed tasks vs none, A/A noise floor (issue 28)
    if parts := controls.terminal(result.records, result.exclude):  # content / length / instruction (issue 35)
        (out_dir / "controls.md").write_text(header(result) + parts + "\n", encoding="utf-8")
        written.append(out_dir / "controls.md")
    if plot:
        written += plots.all_plots(result.summary, result.steps, result.history, out_dir, result.records)
    return written


def exclusions(labels: list[str]) -> tuple[str, ...]:
    """The --exclude labels (none by default); an unknown label is an error (a typo would silently change nothing)."""
    from analysis.statistics.metrics import ERROR_LABELS

    unknown = [label for label in labels if label not in ERROR_LABELS]
    if unknown:
        raise ValueError(f"--exclude {', '.join(unknown)}: unknown error label; known: {', '.join(ERROR_LABELS)}")
    return tuple(dict.fromkeys([*EXCLUDED, *labels]))


def cli(command: str, doc: str, argv: list[str] | None,
        default_out: str) -> tuple[argparse.Namespace, Path, Analysis | None]:
    """The arguments `tables` and `report` share; the analysis, or None after printing why it failed."""
    parser = fmt.CommandParser(command, description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="*", help="run directories (or results.jsonl files)")
    parser.add_argument("--experiment", help="an experiment config name (configs/experiment/<name>.yaml) "
                                             "whose IBM view to add, e.g. ibm_tau2")
    parser.add_argument("--model-map", action="append", default=[], metavar="LABEL=MODEL",
                        help="compare IBM's LABEL rows with our MODEL (repeatable; LABEL * = every label)")
    parser.add_argument("--exclude", action="append", default=[], metavar="LABEL",
                        help="leave records with this error label out of the rates (repeatable, e.g. infra or "
                             "context_overflow); the tables say so. Default: every record counts, infra errors "
                             "as failed trials (tau2-bench leaderboard convention)")
    parser.add_argument("--out", help=f"output (default: <first run>/{default_out})")
    parser.add_argument("--no-plots", action="store_true")
    add_pool_option(parser)
    identity.add_shared_tasks_option(parser)
    parser.add_argument("--amortise-over", type=int, metavar="N",
                        help="deployment tasks that share the one-off memory-building cost (default: the "
                             "episodes evaluated per row)")
    args = parser.parse_args(argv)
    if not runs_named(command, args.runs):
        return args, Path(), None
    first = Path(args.runs[0])
    out = Path(args.out) if args.out else (first.parent if first.is_file() else first) / default_out
    try:
        models = dict(item.split("=", 1) for item in args.model_map)
        return args, out, analyse(args.runs, args.experiment, models=models, exclude=exclusions(args.exclude),
                                  amortise_over=args.amortise_over, pool_runs=args.pool_runs,
                                  shared_tasks=args.shared_tasks)
    except (FileNotFoundError, ValueError) as exc:
        fmt.refuse(command, exc)
        return args, out, None


def main(argv: list[str] | None = None) -> int:
    args, out, result = cli("tables", __doc__, argv, "analysis")
    if result is None:
        return 2
    written = write(result, out, plot=not args.no_plots)
    if banner := fmt.simulated_banner(result.summary["model"]):
        print(banner + "\n")
    # the terminal gets the compact tables, each line within fmt.WIDTH; the .md / .csv files keep every column
    print(fmt.wrap(header(result)) + fmt.plain(compact_display(result.summary)))
    for line in scenario_warnings(result.summary):
        print(fmt.wrap(line), file=sys.stderr)
    if pulled := pulls.terminal(result.records, result.exclude):
        print("\n" + pulled)
    print("\n" + models_terminal(result.models))
    if parts := controls.terminal(result.records, result.exclude):
        print("\n" + parts)
    if by_order := orders.terminal(result.records, result.exclude):
        print("\n" + by_order)
    if effects := task_effects.terminal(result):  # per task vs none, the noise floor beside Δ (issue 28)
        print("\nPer task vs none (links to each task's compare page: task_effects.md):\n" + effects)
    for name, table in result.views.items():
        print(f"\n{name}:\n" + ibm.terminal(table))  # notes as footnotes; {name}.md keeps them in the rows
        for line in ibm.token_lines(table):
            print(fmt.wrap("  " + line, "    "))
    if result.history.empty:
        print("\n(no memory history files under <run>/memory/: growth plot skipped)")
    print("\n" + fmt.wrap(result.notes + " " + COMPACT_NOTE, ""))
    for warning in result.warnings:
        print(fmt.wrap(f"warning: {warning}"), file=sys.stderr)
    print(fmt.wrap(f"wrote {len(written)} files to {out} (strategies.md: every column of the strategies table)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
