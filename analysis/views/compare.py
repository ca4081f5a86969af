"""The per-model comparison in IBM's shape: model, none, best (the highest success, `none` included; a tie is
said and broken by fewest tokens), best strategy, tokens none -> best (+%), with CIs; and which runs the compare
notebook reads (`runs_to_compare`)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

import pandas as pd

from analysis.runs.load import RESULTS
from analysis.statistics.metrics import BASELINE, CELL

RUNS_ENV = "MEMDELIV_RUNS"  # the notebook's runs when its RUNS cell is empty: paths separated by os.pathsep


class NoRuns(FileNotFoundError):
    """Nothing to compare: the message says where we looked and how to name the runs."""


def run_dirs(path: str | Path) -> list[Path]:
    """A run folder (or its results.jsonl) as itself; any other folder as the run folders under it."""
    path = Path(path).expanduser()
    if path.is_file() and path.name == RESULTS:
        return [path.parent]
    if not path.is_dir():
        where = "" if path.is_absolute() else f" (a relative path is read from {Path.cwd()}, the notebook's folder)"
        raise NoRuns(f"no run directory or {RESULTS} at {path}{where}")
    if (path / RESULTS).is_file():
        return [path]
    found = sorted({f.parent for f in path.rglob(RESULTS)})
    if not found:
        raise NoRuns(f"no {RESULTS} under {path}: give a run folder (runs/<run>) or a folder of runs")
    return found


def checkout(cwd: Path) -> Path | None:
    """The memdeliv checkout `cwd` is in (a folder holding analysis/runs/load.py and configs/), else None."""
    return next((p for p in [cwd, *cwd.parents] if (p / "analysis" / "load.py").is_file()
                 and (p / "configs").is_dir()), None)


def runs_to_compare(given: Iterable[str | Path] = (), env: Mapping[str, str] | None = None,
                    cwd: str | Path | None = None) -> tuple[list[Path], str]:
    """The notebook's run folders and a line saying where they came from: `given` (its RUNS cell), else
    $MEMDELIV_RUNS, else runs/ of the checkout `cwd` is in (its committed fixtures as a demo when runs/ holds
    none). Outside a checkout with nothing given: NoRuns, saying how to name them."""
    env = os.environ if env is None else env
    given = [str(p) for p in given]
    if given:
        return [d for p in given for d in run_dirs(p)], "runs from RUNS"
    named = [p for p in env.get(RUNS_ENV, "").split(os.pathsep) if p]
    if named:
        return [d for p in named for d in run_dirs(p)], f"runs from ${RUNS_ENV}"
    cwd = Path.cwd() if cwd is None else Path(cwd)
    repo = checkout(cwd.resolve())
    how = (f"set RUNS in the notebook's first code cell (RUNS = ['path/to/run', ...]) or the environment "
           f"variable {RUNS_ENV}=path{os.pathsep}path before starting Jupyter")
    if repo is None:
        raise NoRuns(f"no runs to compare: {cwd} is not inside a memdeliv checkout, so there is no runs/ to "
                     f"fall back on; {how}")
    if any((repo / "runs").rglob(RESULTS)):
        return run_dirs(repo / "runs"), f"every run under {repo / 'runs'} (none named in RUNS or ${RUNS_ENV})"
    fixtures = repo / "tests" / "fixtures" / "runs"
    demo = [fixtures / "oracle_retail", fixtures / "constructed_mixed"]
    if not all((d / RESULTS).is_file() for d in demo):
        raise NoRuns(f"no runs to compare: no {RESULTS} under {repo / 'runs'}; {how}")
    return demo, (f"DEMO: no runs under {repo / 'runs'} yet, so the committed test fixtures "
                  "(constructed_mixed is CONSTRUCTED: its success figures measure nothing)")



def best_rows(summary: pd.DataFrame, include_baseline: bool = True) -> pd.DataFrame:
    """Per (benchmark, split, model): the strategy with the highest success, `none` included (a memory strategy
    below `none` is never "best"); on a tie the fewest tokens per task is named and `tied` lists the others at
    the same success (the rule in `best_rule`). `include_baseline=False`: among the memory strategies only."""
    others = summary if include_baseline else summary[summary["strategy"] != BASELINE]
    if others.empty:
        return others.assign(tied="", best_rule="")
    ranked = others.assign(_tok=others["tokens/task"].fillna(float("inf")), _rate=others["success"].round(9))
    ranked = ranked.sort_values(["_rate", "_tok"], ascending=[False, True], kind="stable")
    rows = []
    for _, cell in ranked.groupby(CELL, sort=False, dropna=False):
        top = cell.iloc[0]
        tied = [str(s) for s in cell.loc[cell["_rate"] == top["_rate"], "strategy"].iloc[1:]]
        rows.append(top.drop(labels=["_tok", "_rate"]).to_dict() | {
            "tied": ", ".join(tied), "best_rule": f"tied with {', '.join(tied)}: fewest tokens/task named" if tied
            else ""})
    return pd.DataFrame(rows)


def model_table(summary: pd.DataFrame, pairs: pd.DataFrame) -> pd.DataFrame:
    """One row per (benchmark, split, model) that has a `none` row; rates as fractions, CIs alongside."""
    rows = []
    best = best_rows(summary).set_index(CELL)
    for _, base in summary[summary["strategy"] == BASELINE].iterrows():
        key = tuple(base[c] for c in CELL)
        row = {**dict(zip(CELL, key)), "tasks": base["tasks"], "trials": base["trials"],
               "none": base["success"], "none_lo": base["success_lo"], "none_hi": base["success_hi"],
               "tokens_none": base["tokens/task"]}
        if key in best.index:
            b = best.loc[key]
            match = pairs[(pairs[CELL].apply(tuple, axis=1) == key) & (pairs["a"] == b["strategy"])
                          & (pairs["b"] == BASELINE)] if len(pairs) else pairs
            none_best = b["strategy"] == BASELINE
            row.update({"best": b["success"], "best_lo": b["success_lo"], "best_hi": b["success_hi"],
                        "best_strategy": b["strategy"], "best_rule": b["best_rule"],
                        "Δ_pts": 0.0 if none_best else b["Δsuccess_pts"], "tokens_best": b["tokens/task"],
                        "Δtokens_%": 0.0 if none_best else b["Δtokens_%"]})
            if len(match):
                m = match.iloc[0]
                row.update({"Δ_lo": m["diff_lo"], "Δ_hi": m["diff_hi"], "p": m["p"], "test": m["test"]})
        row["few_tasks"] = bool(base["few_tasks"])
        rows.append(row)
    return pd.DataFrame(rows)
