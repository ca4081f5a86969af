"""Which τ² task set (and user simulator, agent scheme, judge) produced the records: one label line per
(benchmark, split, model), printed above every table, and a warning when an experiment expects another set.

Reads only the record fields the τ² adapter writes (`task_set`, `user_model`, `agent`, `judge_model`);
records written before task-set identity existed are labelled "task set not recorded".
"""

from __future__ import annotations

import json

import pandas as pd

from analysis.runs.identity import differing


def _task_set_label(value, differ: tuple[str, ...] = ()) -> str:
    """The set's name and fingerprints; `differ`: the other parts (policy, db) that differ between the labels
    shown together, printed too."""
    if not isinstance(value, dict):
        return "task set not recorded"
    sha = str(value.get("tasks_sha256", ""))[:12]
    name = value.get("known_as") or "unknown task file"
    more = "".join(f", {part} sha256 {str(value.get(part + '_sha256') or '?')[:12]}…" for part in differ
                   if part not in ("tasks", "split"))
    return f"{name} (tasks sha256 {sha}…, split {str(value.get('split_sha256', ''))[:12]}…{more}, " \
           f"source {value.get('source')}, tau2 {value.get('tau2')})"


def _tau2(records: pd.DataFrame) -> pd.DataFrame:
    if records.empty or "benchmark" not in records:
        return records.iloc[0:0]
    return records[records["benchmark"].astype(str).str.startswith("tau2_")]


def labels(records: pd.DataFrame) -> list[str]:
    """'tau2_airline/test model=…: <task set>; user simulator …; agent …; judge …', one per distinct setup."""
    lines = []
    tau2 = _tau2(records)
    differ = tuple(differing(tau2["task_set"])) if "task_set" in tau2 else ()
    for _, r in tau2.iterrows():
        task_set = r.get("task_set")
        parts = [_task_set_label(task_set, differ), f"user simulator {r.get('user_model') or '?'}"]
        if isinstance(r.get("agent"), str):
            parts.append(f"agent {r['agent']}")
        if isinstance(r.get("judge_model"), str):
            parts.append(f"judge {r['judge_model']}")
        line = f"{r['benchmark']}/{r['split']} model={r['model']}: " + "; ".join(parts)
        if line not in lines:
            lines.append(line)
    return lines


def warnings(records: pd.DataFrame, expected: str | None) -> list[str]:
    """A warning per τ² (benchmark, split) whose task set is not `expected` (e.g. "tau2-bench v1.0.1")."""
    if not expected:
        return []
    out = []
    for (bench, split), g in _tau2(records).groupby(["benchmark", "split"], sort=False):
        column = g["task_set"] if "task_set" in g else [None] * len(g)
        sets = {json.dumps(v, sort_keys=True) if isinstance(v, dict) else "null" for v in column}
        names = sorted(_task_set_label(json.loads(s)) for s in sets)
        if len(sets) > 1:
            out.append(f"{bench}/{split}: records from {len(sets)} different task sets are mixed: {'; '.join(names)}")
        if not all(str((json.loads(s) or {}).get("known_as", "")).startswith(expected) for s in sets):
            out.append(f"{bench}/{split}: ran {'; '.join(names)}, not {expected}: published numbers were measured "
                       f"on {expected}, so the comparison is across task sets")
    return out
