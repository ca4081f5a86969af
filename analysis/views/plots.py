"""Plots (matplotlib, Agg): each function draws one figure from the analysis DataFrames and saves PNG + SVG.

* success_vs_tokens: per (benchmark, split, model), one point per strategy, 95% CI bars, Pareto front marked;
  control arms (placebo, protocol_only: analysis.views.controls) hollow, labelled "(control)", off the front.
* success_vs_cost: the same with USD per task (all roles, memory build amortised) on x; priced rows only.
* memory_vs_steps: delivered memory tokens at each agent step, mean over tasks, one line per strategy.
* memory_growth: guidelines in the memory artifact over adaptation updates (from memory history files).
* strategy_bars: success per strategy with 95% CI, grouped by model.
* dose_response: success vs delivered memory tokens per strategy family, `none` as a band (docs/dose.md).
* learning_curves: online learners' rolling success and memory size vs episodes seen, per trial stream.
* robustness: success vs the share of corrupted memory, one line per strategy, `none` as a band (docs/robustness.md).
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd

from analysis import fmt
from analysis.statistics.metrics import CELL, with_assembly
from analysis.views import curves, robustness as robust


def save(fig, out_dir: Path, name: str) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = [out_dir / f"{name}.png", out_dir / f"{name}.svg"]
    fig.tight_layout()
    fig.savefig(paths[0], dpi=130)
    fig.savefig(paths[1])
    plt.close(fig)
    return paths


def pareto_front(points: pd.DataFrame, x: str, y: str) -> pd.DataFrame:
    """Points no other point beats on both axes (fewer tokens and higher success)."""
    ordered = points.sort_values([x, y], ascending=[True, False])
    front, best = [], float("-inf")
    for idx, row in ordered.iterrows():
        if row[y] > best:
            front.append(idx)
            best = row[y]
    return points.loc[front].sort_values(x)


def _cell_title(key) -> str:
    bench, split, model, *rest = key
    variant = rest[0] if rest and isinstance(rest[0], str) and rest[0] else ""
    return f"{fmt.model_label(model)}\n{bench}/{split}" + (f"\n{variant}" if variant else "")


def _control(row: pd.Series) -> bool:
    """A control arm (analysis.views.controls): drawn hollow, never on the Pareto front (it is not a deployment)."""
    return not fmt.missing(row.get("control_arm"))


def _label(row: pd.Series) -> str:
    return row["strategy"] + (" (control)" if _control(row) else "")


def success_vs_tokens(summary: pd.DataFrame, out_dir: Path) -> list[Path]:
    return _success_scatter(summary.dropna(subset=["tokens/task"]), "tokens/task",
                            "agent tokens per task (prompt + completion, tokens)", out_dir, "success_vs_tokens")


def success_vs_cost(summary: pd.DataFrame, out_dir: Path) -> list[Path]:
    """As success_vs_tokens with USD per task on x (agent + user simulator + judge, memory build amortised;
    analysis.runs.costs): one point per strategy per model, 95% CI bars, the Pareto front circled. Unpriced rows
    are left out; no priced row, no figure."""
    if "usd+build/task" not in summary:
        return []
    return _success_scatter(summary[summary["usd+build/task"].notna()], "usd+build/task",
                            "USD per task (agent + user + judge, memory build amortised)", out_dir, "success_vs_cost")


def _success_scatter(rows: pd.DataFrame, x: str, xlabel: str, out_dir: Path, name: str) -> list[Path]:
    """One panel per cell: success (95% CI bars) against `x`, one point per strategy, the Pareto front circled."""
    cells = list(rows.groupby(CELL, sort=False, dropna=False))
    if not cells:
        return []
    fig, axes = plt.subplots(1, len(cells), figsize=(5.2 * len(cells), 4.2), squeeze=False)
    for ax, (key, cell) in zip(axes[0], cells):
        for _, r in cell.iterrows():
            y = 100 * r["success"]
            err = [[y - 100 * r["success_lo"]], [100 * r["success_hi"] - y]]
            ax.errorbar(r[x], y, yerr=err, fmt="o", capsize=4, label=_label(r),
                        **({"mfc": "none", "ls": ":"} if _control(r) else {}))
        front = pareto_front(cell[[not _control(r) for _, r in cell.iterrows()]], x, "success")
        ax.plot(front[x], 100 * front["success"], "--o", color="grey", lw=1, ms=14, mfc="none",
                label="Pareto front (circled)")
        _finish_panel(ax, key, xlabel)
    return save(fig, out_dir, name)


MARKERS = ("o", "s", "^", "D", "v", "x", "P")
DASHES = ("-", "--", ":", "-.")


def line_plot(lines: dict[str, pd.Series], xlabel: str, ylabel: str, title: str, out_dir: Path,
              name: str) -> list[Path]:
    """One line per label (x = the series index); no lines, no figure."""
    if not lines:
        return []
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for i, (label, series) in enumerate(lines.items()):
        # each line its own marker, dash and size, hollow: lines on the same values (full on two models) nest
        # instead of hiding one another
        ax.plot(series.index, series.values, marker=MARKERS[i % len(MARKERS)], linestyle=DASHES[i % len(DASHES)],
                markersize=max(3.0, 10.0 - 2.0 * i), fillstyle="none", alpha=0.85, label=label)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return save(fig, out_dir, name)


def memory_vs_steps(steps: pd.DataFrame, out_dir: Path) -> list[Path]:
    lines = {}
    steps = with_assembly(steps)
    for (model, strategy, variant), g in steps.groupby(["model", "strategy", "assembly"], sort=False):
        mean = g.groupby("step")["memory_tokens"].mean()
        label = f"{strategy} ({fmt.model_label(model)}{'; ' + variant if variant else ''})"
        lines[label] = pd.Series(mean.values, index=mean.index + 1)  # step 1 = first call
    return line_plot(lines, "agent step (1 = first model call of a task)",
                     "delivered memory tokens per step (mean over tasks)", "Memory delivered at each step",
                     out_dir, "memory_vs_steps")


def memory_growth(history: pd.DataFrame, out_dir: Path) -> list[Path]:
    """Empty history (no memory/**/history*.jsonl in the runs): no figure, nothing written."""
    lines = {f"{strategy} ({Path(run_dir).name})": g.sort_values("update").set_index("update")["guidelines"]
             for (run_dir, strategy), g in history.groupby(["run_dir", "strategy"], sort=False)}
    return line_plot(lines, "adaptation update (episodes / curator calls)", "guidelines in memory (count)",
                     "Memory growth over adaptation", out_dir, "memory_growth")


def strategy_bars(summary: pd.DataFrame, out_dir: Path) -> list[Path]:
    if summary.empty:
        return []
    cells = list(summary.groupby(CELL, sort=False, dropna=False))
    strategies = list(dict.fromkeys(summary["strategy"]))
    width = 0.8 / max(len(strategies), 1)
    fig, ax = plt.subplots(figsize=(max(6.4, 1.6 * len(cells) * max(len(strategies), 1) / 2), 4.2))
    for i, strategy in enumerate(strategies):
        xs: list[float] = []
        ys: list[float] = []
        errs: list[list[float]] = [[], []]
        for j, (_, cell) in enumerate(cells):
            r = cell[cell["strategy"] == strategy]
            if r.empty:
                continue
            r = r.iloc[0]
            xs.append(j + (i - (len(strategies) - 1) / 2) * width)
            ys.append(100 * r["success"])
            errs[0].append(100 * (r["success"] - r["success_lo"]))
            errs[1].append(100 * (r["success_hi"] - r["success"]))
        control = any(_control(r) for _, r in summary[summary["strategy"] == strategy].iterrows())
        ax.bar(xs, ys, width=width, yerr=errs, capsize=3, label=strategy + (" (control)" if control else ""),
               hatch="//" if control else None, fill=not control)
    ax.set_xticks(range(len(cells)))
    # a cell's title is several long words (model, benchmark/split): tilted, so neighbours never overlap
    ax.set_xticklabels([_cell_title(k) for k, _ in cells], fontsize=8, rotation=20, ha="right",
                       rotation_mode="anchor")
    ax.set_ylabel("success rate (%, 95% CI over tasks)")
    ax.set_ylim(0, 105)
    ax.set_title("Success per strategy")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(title="strategy", fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))
    return save(fig, out_dir, "strategy_bars")


def dose_response(summary: pd.DataFrame, out_dir: Path) -> list[Path]:
    """Success vs delivered memory tokens per strategy family (curves.dose_points), CIs as bars, the `none`
    baseline as a band; one panel per (benchmark, split, model, assembly) cell. No dose cells, no figure."""
    cells = curves.dose_points(summary[~summary["strategy"].map(robust.corruption_of).notna()]
                               if len(summary) else summary)  # corrupted cells: robustness.png
    if not cells:
        return []
    fig, panels = _baseline_panels(cells)
    for ax, (key, cell) in panels:
        for name, points in cell["points"].groupby("family", sort=False):
            points = points.dropna(subset=["tokens"])
            x = points["tokens"].clip(lower=1)  # log axis: a zero-token dose sits at 1
            y = 100 * points["success"]
            options = sorted({v.split("=")[0] for v in points["variant"].dropna()})
            ax.errorbar(x, y, yerr=[y - 100 * points["lo"], 100 * points["hi"] - y], fmt="-o", capsize=3,
                        label=f"{name} ({', '.join(options)})" if options else name)
            for xi, yi, v in zip(x, y, points["variant"]):  # the dose itself; the option is in the legend
                ax.annotate(v.split("=", 1)[-1] if v else "default", (xi, yi), fontsize=7, xytext=(3, 3),
                            textcoords="offset points")
        ax.set_xscale("log")
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        _finish_panel(ax, key, "delivered memory tokens per task (mean; log scale)")
    return save(fig, out_dir, "dose_response")


def _baseline_panels(cells: dict[tuple, dict]) -> tuple:
    """A figure with one panel per cell, each cell's `none` baseline (y, lo, hi) drawn as a grey band."""
    fig, axes = plt.subplots(1, len(cells), figsize=(6.0 * len(cells), 4.4), squeeze=False)
    for ax, cell in zip(axes[0], cells.values()):
        if cell["baseline"] is not None:
            y, lo, hi = (100 * v for v in cell["baseline"])
            ax.axhspan(lo, hi, color="grey", alpha=0.2, label="none (95% CI)")
            ax.axhline(y, color="grey", lw=1)
    return fig, list(zip(axes[0], cells.items()))


def _finish_panel(ax, key, xlabel: str) -> None:
    """A success panel's axes, title, grid and legend (the scatter, dose and robustness figures share them)."""
    ax.set_xlabel(xlabel)
    ax.set_ylabel("success rate (%, 95% CI over tasks)")
    ax.set_title(_cell_title(key), fontsize=10)
    ax.set_ylim(-5, 105)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="best")


def learning_curves(records: pd.DataFrame | None, out_dir: Path) -> list[Path]:
    """Online learners: rolling success (95% Wilson band) vs episodes seen, one line per trial stream, and the
    memory's size on a second axis (dashed). No learner's records, no figure."""
    points = curves.learning_points(records) if records is not None else pd.DataFrame()
    if points.empty:
        return []
    panels = list(points.groupby([*CELL, "strategy"], sort=False, dropna=False))
    fig, axes = plt.subplots(1, len(panels), figsize=(6.4 * len(panels), 4.4), squeeze=False)
    for ax, (key, panel) in zip(axes[0], panels):
        size_ax = ax.twinx()
        for (run_dir, trial), stream in panel.groupby(["run_dir", "trial"], sort=False):
            name = f"stream {trial}" + (f" ({Path(str(run_dir)).name})" if panel["run_dir"].nunique() > 1 else "")
            line, = ax.plot(stream["episodes_seen"], 100 * stream["rate"], label=name)
            ax.fill_between(stream["episodes_seen"], 100 * stream["lo"], 100 * stream["hi"], color=line.get_color(),
                            alpha=0.15)
            if stream["memory_size"].notna().any():
                size_ax.plot(stream["episodes_seen"], stream["memory_size"], "--", color=line.get_color(), lw=1)
        ax.set_xlabel("episodes seen by this stream before the episode")
        ax.set_ylabel(f"success (%, rolling {curves.WINDOW}, 95% Wilson band)")
        size_ax.set_ylabel("memory size (bullets / guidelines; dashed)")
        ax.set_ylim(-5, 105)
        ax.set_title(f"{key[-1]}: {_cell_title(key[:-1])}", fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="upper left")
    return save(fig, out_dir, "learning_curves")


def robustness(summary: pd.DataFrame, out_dir: Path) -> list[Path]:
    """Success (95% CI bars) vs the corrupted share of memory, one line per strategy family and corruption kind,
    `none` as a band; one panel per (benchmark, split, model, assembly) cell. No corrupted rows, no figure."""
    cells = robust.points(summary)
    if not cells:
        return []
    fig, panels = _baseline_panels(cells)
    for ax, (key, cell) in panels:
        for (name, kind), points in cell["points"].groupby(["family", "kind"], sort=False):
            y = 100 * points["success"]
            ax.errorbar(points["rate"], y, yerr=[y - 100 * points["lo"], 100 * points["hi"] - y], fmt="-o",
                        capsize=3, label=f"{name} ({kind})")
        _finish_panel(ax, key, "corrupted share of the memory's lessons (%)")
    return save(fig, out_dir, "robustness")


def all_plots(summary: pd.DataFrame, steps: pd.DataFrame, history: pd.DataFrame, out_dir: Path,
              records: pd.DataFrame | None = None) -> list[Path]:
    return (success_vs_tokens(summary, out_dir) + success_vs_cost(summary, out_dir) + memory_vs_steps(steps, out_dir)
            + memory_growth(history, out_dir) + strategy_bars(summary, out_dir)
            + dose_response(summary, out_dir) + learning_curves(records, out_dir) + robustness(summary, out_dir))
