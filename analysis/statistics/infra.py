"""Infra errors in a decision: whether strategies' infra rates differ (a strategy may cause them), and which
tasks never produced a result because every trial of them was infra. Infra episodes count as failed trials by
default (tau2-bench's leaderboard convention; docs/failure-accounting.md)."""

from __future__ import annotations

import pandas as pd

from analysis.statistics.metrics import CELL, GROUP, INFRA, with_assembly
from harness import infra_rates  # the infra-rates rule, shared with the runner (plain definitions)


def differ_line(cell: pd.DataFrame) -> str:
    """'Infra errors differ between strategies (none 7/80, full 0/80): a strategy may cause them.' for one
    (benchmark, split, model, assembly) whose strategies' infra rates differ, by the rule the runner and the
    tables use (harness/infra_rates.py); '' when they agree."""
    if cell.empty or "error" not in cell:
        return ""
    counts = cell.assign(_infra=cell["error"] == INFRA).groupby("strategy", sort=False)["_infra"].agg(["sum", "size"])
    text = infra_rates.differ_text({s: (int(n), int(t)) for s, (n, t) in counts.iterrows()})
    return f"{text[0].upper()}{text[1:]}." if text else ""


def differ_lines(records: pd.DataFrame) -> list[str]:
    """differ_line per (benchmark, split, model, assembly), prefixed by where."""
    return [f"{infra_rates.where(key)}: {line}"
            for key, cell in with_assembly(records).groupby(CELL, sort=False, dropna=False)
            if (line := differ_line(cell))]


def all_infra_tasks(records: pd.DataFrame, shown: int = 20) -> list[str]:
    """One line per table row (benchmark, split, model, assembly, strategy) with tasks whose every trial was
    infra, naming them: they never produced a result, so they count as failures only by convention."""
    if records.empty or "error" not in records:
        return []
    lines = []
    frame = with_assembly(records).assign(_infra=records["error"] == INFRA)
    for key, g in frame[frame["_infra"].groupby([frame[c] for c in [*GROUP, "task_id"]], dropna=False)
                        .transform("all")].groupby(GROUP, sort=False, dropna=False):
        tasks = sorted(g["task_id"].astype(str).unique(), key=lambda t: (len(t), t))
        named = ", ".join(tasks[:shown]) + (f", ... ({len(tasks) - shown} more)" if len(tasks) > shown else "")
        lines.append(f"{infra_rates.where(key)}: every trial of {len(tasks)} task(s) was infra: {named} "
                     "(counted as failures; --exclude infra leaves them out)")
    return lines
