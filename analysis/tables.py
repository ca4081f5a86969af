"""`python -m analysis.tables RUN_DIR... [--experiment NAME] [--exclude LABEL]` (`make tables`): tables + plots
into <run>/analysis/.

Writes, for the records under the given run directories:
    strategies.md/.csv  per (benchmark, split, model, strategy): rates with 95% CIs, Pass^k, TGC/SGC, tokens,
                        steps, cost per task, Δ vs none, error counts per label (`errors`)
    models.md/.csv      IBM's shape: model, none, best, best strategy, Δ with paired CI and p, tokens none → best
    pairs.md/.csv       every pair of strategies on the same tasks (paired bootstrap CI, McNemar / sign-flip p)
    ibm_<view>.md/.csv  with --experiment: IBM's published rows beside ours
    *.png / *.svg       plots (see analysis.plots)
and prints the strategies table (and the IBM view). By default every record counts and an infra error is a failed
trial (tau2-bench's leaderboard convention). `--exclude LABEL` (repeatable; e.g. `--exclude infra`) leaves
records with that error out of the rates: a non-default view, named in the first line above every table.
`--pool-runs` counts runs that hold the same episodes as extra trials (analysis.load; refused without it).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from analysis import fmt, ibm, plots, power, stats, task_sets
from analysis.build_cost import add_build_cost
from analysis.compare import model_table
from analysis.load import add_pool_option, load_memory_history, load_records, steps_frame
from analysis.metrics import EXCLUDED, GROUP, INFRA, infra_imbalance, paired_comparisons, summarize

FEW = (f"* = fewer than {stats.MIN_TASKS} tasks: CI too wide to rank strategies. underpowered = |Δ| below the "
       f"minimum detectable Δ at 80% power for these tasks x trials (make power).")
SHORT = {"context_overflow": "ctx", "user_simulator": "user"}  # the rest print as their label


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
    warnings: list[str] = field(default_factory=list)
    exclude: tuple[str, ...] = EXCLUDED

    @property
    def notes(self) -> str:
        return notes(self.exclude)


def analyse(paths: list[str], experiment: str | None = None, n_boot: int = stats.N_BOOT,
            models: dict[str, str] | None = None, exclude: tuple[str, ...] = EXCLUDED,
            amortise_over: int | None = None, pool_runs: bool = False) -> Analysis:
    records = load_records(paths, overlap="pool" if pool_runs else "refuse")
    if records.empty:
        raise SystemExit(f"no records found under {', '.join(map(str, paths))}")
    summary = power.flag_underpowered(summarize(records, n_boot=n_boot, exclude=exclude), records)
    summary = add_build_cost(summary, records, amortise_over)
    summary = add_learning_counts(summary, records)
    pairs = paired_comparisons(records, n_boot=n_boot, exclude=exclude)
    result = Analysis(records, summary, pairs, model_table(summary, pairs), steps_frame(records),
                      load_memory_history(sorted(set(records["run_dir"]))), exclude=tuple(exclude))
    result.labels = task_sets.labels(records)
    if experiment:
        block = ibm.experiment_analysis(experiment)
        if block["view"]:  # view: null = no published rows to add (e.g. +experiment=assembly)
            result.views[block["view"]] = ibm.view(experiment, summary, models=models, records=records)
        result.warnings = task_sets.warnings(records, block.get("task_set"))
    result.warnings += infra_imbalance(summary)
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
    lines = [f"Task set: {line}" for line in result.labels] + [f"WARNING: {w}" for w in result.warnings]
    return view_line(result.exclude) + "\n\n" + ("\n".join(f"- {line}" for line in lines) + "\n\n" if lines else "")


def strategies_display(summary: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for _, r in summary.iterrows():
        row = {"benchmark": r["benchmark"], "split": r["split"], "model": fmt.model_label(r["model"]),
               "strategy": r["strategy"] + (" *" if r["few_tasks"] else ""),
               "tasks": r["tasks"], "trials": r["trials"], "errors": errors_cell(r),
               "success": fmt.pct_ci(r["success"], r["success_lo"], r["success_hi"])}
        for k in range(2, int(r["trials"]) + 1):
            row[f"pass^{k}"] = fmt.pct_ci(r.get(f"pass^{k}"), r.get(f"pass^{k}_lo"), r.get(f"pass^{k}_hi"))
        if not fmt.missing(r.get("tgc")):
            row["TGC"] = fmt.pct_ci(r["tgc"], r["tgc_lo"], r["tgc_hi"], sign="")
            row["SGC"] = fmt.pct_ci(r["sgc"], r["sgc_lo"], r["sgc_hi"], sign="")
            row["scenarios"] = scenarios_cell(r)
        row.update({"Δ vs none": _delta(r), "tokens/task": fmt.kilo(r["tokens/task"]),
                    "Δtokens": "-" if r["strategy"] == "none" else fmt.signed_pct(r["Δtokens_%"]), "prompt/task": fmt.kilo(r["prompt_tokens/task"]),
                    "cached/task": fmt.kilo(r["cached_tokens/task"]),
                    "cache write/task": fmt.kilo(r.get("cache_write_tokens/task")),
                    "completion/task": fmt.kilo(r["completion_tokens/task"]),
                    "memory/task": fmt.kilo(r["memory_tokens/task"]),
                    **_build(r),
                    "steps/task": "-" if fmt.missing(r["steps/task"]) else f"{r['steps/task']:.1f}",
                    "cost/task": fmt.cost(r["cost_usd/task"])})
        for name in ("cited steps", "updates lost"):  # ACE only (add_learning_counts)
            if not fmt.missing(r.get(name)):
                row[name] = str(int(r[name]))
        if not fmt.missing(r.get("answer_calls/task")) and r["answer_calls/task"] > 0:
            row["answer calls/task"] = f"{r['answer_calls/task']:.1f}"  # answer_mode=rebuild: in tokens too
        rows.append(row)
    shown = with_assembly(pd.DataFrame(rows), summary)
    passes = sorted((c for c in shown.columns if c.startswith("pass^")), key=lambda c: int(c[5:]))
    front = [c for c in shown.columns if c not in passes and c not in ("Δ vs none",)]
    at = front.index("success") + 1
    return shown[front[:at] + passes + ["Δ vs none"] + front[at:]].fillna("-")


def compact_display(summary: pd.DataFrame) -> pd.DataFrame:
    """The end-of-sweep table, narrow enough for a terminal (<= 160 columns on a usual sweep): model, strategy,
    tasks x trials (k), errors, success [CI], the highest Pass^k, SGC where scored, Δ vs none with its flag, and
    tokens, memory tokens and cost per task (COMPACT_NOTE). `make tables` and `--wide` show every column."""
    cells = summary[["benchmark", "split"]].astype(str).agg("/".join, axis=1)
    rows = []
    for (_, r), cell in zip(summary.iterrows(), cells):
        row = {"benchmark/split": cell, "model": fmt.model_label(r["model"]).replace(" (SIMULATED)", ""),
               "strategy": r["strategy"] + (" *" if r["few_tasks"] else ""),
               "tasks×k": f"{r['tasks']}×{r['trials']}", "errors": errors_cell(r),
               "success": fmt.pct_ci(r["success"], r["success_lo"], r["success_hi"])}
        k = int(r["trials"])
        if k >= 2:
            row["pass^k"] = f"^{k} {fmt.pct(r.get(f'pass^{k}'))}"  # its CI: --wide
        if not fmt.missing(r.get("tgc")):
            row["SGC"] = fmt.pct_ci(r["sgc"], r["sgc_lo"], r["sgc_hi"], sign="")
        row.update({"Δ vs none": _delta(r, short=True), "tokens": fmt.kilo(r["tokens/task"]),
                    "memory": fmt.kilo(r["memory_tokens/task"]), "cost": fmt.cost(r["cost_usd/task"])})
        rows.append(row)
    shown = pd.DataFrame(rows).fillna("-")
    if cells.nunique() == 1:  # one benchmark: said once above the table instead
        shown = shown.drop(columns="benchmark/split")
    return with_assembly(shown, summary)


COMPACT_NOTE = ("tasks×k = tasks × trials per task; pass^k at the highest k run; tokens, memory (the delivered "
                "memory's share of the prompt) and cost are per task; `--wide` (WIDE=1) shows every column.")


def errors_cell(r: pd.Series) -> str:
    """'ctx 3, agent 1, infra 2': records per error label in this cell ('-' when none failed with an error)."""
    counts = [(c[4:], r[c]) for c in r.index if c.startswith("err_") and not fmt.missing(r[c]) and r[c]]
    return ", ".join(f"{SHORT.get(label, label)} {int(n)}" for label, n in counts) or "-"


def scenarios_cell(r: pd.Series) -> str:
    """'18' or '17 (+2 incomplete)': SGC is over the complete scenarios only."""
    done, cut = r.get("scenarios"), r.get("scenarios_incomplete")
    if fmt.missing(done):
        return "-"
    return f"{int(done)}" + (f" (+{int(cut)} incomplete)" if not fmt.missing(cut) and cut else "")


def scenario_warnings(summary: pd.DataFrame) -> list[str]:
    """One line per cell whose SGC had to leave scenarios out (a missing or --exclude'd task, e.g. a LIMIT cut)."""
    lines = []
    if "scenarios_incomplete" not in summary:
        return lines
    for _, r in summary[summary["scenarios_incomplete"].fillna(0) > 0].iterrows():
        setting = f" [{r['assembly']}]" if isinstance(r.get("assembly"), str) and r["assembly"] else ""
        lines.append(f"warning: {r['benchmark']}/{r['split']}/{r['model']}/{r['strategy']}{setting}: SGC over "
                     f"{int(r['scenarios'])} complete scenarios; {int(r['scenarios_incomplete'])} incomplete "
                     "(a task with no record, e.g. a LIMIT that cut the scenario, or with an --exclude'd error)")
    return lines


def _build(r: pd.Series) -> dict[str, str]:
    """The one-off memory-building tokens and their share per task (analysis.build_cost)."""
    if "build_tokens" not in r:
        return {}
    n = r.get("amortised_over")
    per = fmt.kilo(r["build_tokens/task"])
    return {"build (one-off)": fmt.kilo(r["build_tokens"]),
            "build/task": per if fmt.missing(n) else f"{per} (/{int(n)})"}


def with_assembly(shown: pd.DataFrame, source: pd.DataFrame) -> pd.DataFrame:
    """An `assembly` column after `model` when the runs varied placement / context policy / answer mode."""
    if "assembly" not in source or not (source["assembly"].fillna("") != "").any():
        return shown
    shown = shown.copy()
    shown.insert(list(shown.columns).index("model") + 1, "assembly", list(source["assembly"].fillna("")))
    return shown


def _delta(r: pd.Series, short: bool = False) -> str:
    if r["strategy"] == "none" or fmt.missing(r["Δsuccess_pts"]):
        return "-"
    u = r.get("underpowered")
    flag = (" underpowered" + ("" if short else f" (MDΔ {fmt.mdd(r['MDΔ_pts'])})")) if not fmt.missing(u) and bool(u) else ""
    pairs = r.get("Δpairs")
    fewer = f" on {int(pairs)} pairs" if not fmt.missing(pairs) and pairs < r["records"] else ""
    if short:
        return f"{r['Δsuccess_pts']:+.1f} pts{fewer}{flag}"
    return f"{r['Δsuccess_pts']:+.1f} pts ({fmt.signed_pct(r['Δsuccess_%'])}){fewer}{flag}"


def models_display(models: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for _, r in models.iterrows():
        best = r.get("best_strategy")
        rows.append({"benchmark": r["benchmark"], "split": r["split"],
                     "model": fmt.model_label(r["model"]) + (" *" if r["few_tasks"] else ""), "tasks": r["tasks"],
                     "trials": r["trials"], "none": fmt.pct_ci(r["none"], r["none_lo"], r["none_hi"]),
                     "best": fmt.pct_ci(r.get("best"), r.get("best_lo"), r.get("best_hi")),
                     "best strategy": best if isinstance(best, str) else "-",
                     "Δ (paired)": fmt.points(r.get("Δ_pts"), r.get("Δ_lo"), r.get("Δ_hi")),
                     "p": fmt.pvalue(r.get("p")),
                     "tokens none → best": fmt.arrow(fmt.kilo(r["tokens_none"]), fmt.kilo(r.get("tokens_best")),
                                                     fmt.signed_pct(r.get("Δtokens_%")))
                     if isinstance(best, str) else "-"})
    return with_assembly(pd.DataFrame(rows), models)


def pairs_display(pairs: pd.DataFrame) -> pd.DataFrame:
    shown = pairs[["benchmark", "split", "model", "a", "b", "n"]].copy()
    shown["a − b"] = [fmt.points(d, lo, hi) for d, lo, hi in zip(pairs["diff_pts"], pairs["diff_lo"],
                                                                   pairs["diff_hi"])]
    shown["p"] = pairs["p"].map(fmt.pvalue)
    shown["test"] = pairs["test"]
    shown["n"] = [f"{n} *" if few else str(n) for n, few in zip(pairs["n"], pairs["few_tasks"])]
    return with_assembly(shown, pairs)


def markdown(df: pd.DataFrame) -> str:
    return df.to_markdown(index=False, disable_numparse=True) if len(df) else "(no rows)"


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
    if plot:
        written += plots.all_plots(result.summary, result.steps, result.history, out_dir)
    return written


def exclusions(labels: list[str]) -> tuple[str, ...]:
    """The --exclude labels (none by default); an unknown label is an error (a typo would silently change nothing)."""
    from analysis.metrics import ERROR_LABELS

    unknown = [label for label in labels if label not in ERROR_LABELS]
    if unknown:
        raise ValueError(f"--exclude {', '.join(unknown)}: unknown error label; known: {', '.join(ERROR_LABELS)}")
    return tuple(dict.fromkeys([*EXCLUDED, *labels]))


def cli(doc: str, argv: list[str] | None, default_out: str) -> tuple[argparse.Namespace, Path, Analysis | None]:
    """The arguments `tables` and `report` share; the analysis, or None after printing why it failed."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="+", help="run directories (or results.jsonl files)")
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
    parser.add_argument("--amortise-over", type=int, metavar="N",
                        help="deployment tasks that share the one-off memory-building cost (default: the "
                             "episodes evaluated per row)")
    args = parser.parse_args(argv)
    first = Path(args.runs[0])
    out = Path(args.out) if args.out else (first.parent if first.is_file() else first) / default_out
    try:
        models = dict(item.split("=", 1) for item in args.model_map)
        return args, out, analyse(args.runs, args.experiment, models=models, exclude=exclusions(args.exclude),
                                  amortise_over=args.amortise_over, pool_runs=args.pool_runs)
    except (FileNotFoundError, ValueError) as exc:
        print(f"memdeliv {parser.prog}: {exc}", file=sys.stderr)
        return args, out, None


def main(argv: list[str] | None = None) -> int:
    args, out, result = cli(__doc__, argv, "analysis")
    if result is None:
        return 2
    written = write(result, out, plot=not args.no_plots)
    if banner := fmt.simulated_banner(result.summary["model"]):
        print(banner + "\n")
    print(header(result) + markdown(strategies_display(result.summary)))
    for line in scenario_warnings(result.summary):
        print(line, file=sys.stderr)
    print("\n" + markdown(models_display(result.models)))
    for name, table in result.views.items():
        print(f"\n{name}:\n" + ibm.terminal(table))  # notes as footnotes; {name}.md keeps them in the rows
        for line in ibm.token_lines(table):
            print("  " + line)
    if result.history.empty:
        print("\n(no memory history files under <run>/memory/: growth plot skipped)")
    print("\n" + result.notes)
    for warning in result.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    print(f"wrote {len(written)} files to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
