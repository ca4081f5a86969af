"""`python -m analysis.audit RUN_DIR... [--memory PATH]`: which guidelines reached the model, and with what outcome.

Each record lists the guideline ids delivered at every step (`delivered`). Per job (model x strategy x
benchmark) this reports
- the guidelines of the memory artifact that were never delivered in the whole run, and
- per guideline, in how many task x trial records it was present (delivered at one step at least), and how
  many of those succeeded or failed, beside the success rate of the records where it was absent.
Infra-error records are left out (an episode the provider cut short says little about a guideline). The
artifact is the record's `memory` path unless --memory names one.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from analysis import fmt
from analysis.runs.load import load_records
from analysis.statistics.metrics import BASELINE
from memory_kit.memory_file import MemoryFileError, load_memory

JOB_KEYS = ["run_dir", "job", "strategy"]


def usable(df: pd.DataFrame) -> pd.DataFrame:
    return df[df["error"].fillna("") != "infra"].copy()


def presence(df: pd.DataFrame) -> pd.DataFrame:
    """One row per (record, guideline id delivered at any step of it)."""
    rows = []
    for rec in usable(df).itertuples(index=False):
        steps = rec.delivered if isinstance(rec.delivered, list) else []  # NaN when a record has no steps
        ids = {gid for step in steps for gid in step}
        rows += [{"run_dir": rec.run_dir, "job": rec.job, "strategy": rec.strategy, "task_id": rec.task_id,
                  "trial": rec.trial, "success": bool(rec.success), "guideline": gid} for gid in sorted(ids)]
    return pd.DataFrame(rows, columns=[*JOB_KEYS, "task_id", "trial", "success", "guideline"])


def outcome_by_guideline(df: pd.DataFrame) -> pd.DataFrame:
    """Per job and guideline: records present / succeeded / failed, success rate present vs. absent."""
    ok = usable(df)
    totals = ok.groupby(JOB_KEYS).agg(records=("success", "size"), successes=("success", "sum")).reset_index()
    present = presence(df)
    if present.empty:
        return pd.DataFrame(columns=[*JOB_KEYS, "guideline", "present", "present_success", "present_failed",
                                     "success_rate_present", "success_rate_absent"])
    table = present.groupby([*JOB_KEYS, "guideline"]).agg(
        present=("success", "size"), present_success=("success", "sum")).reset_index()
    table = table.merge(totals, on=JOB_KEYS)
    table["present_failed"] = table["present"] - table["present_success"]
    table["success_rate_present"] = table["present_success"] / table["present"]
    absent = table["records"] - table["present"]
    table["success_rate_absent"] = ((table["successes"] - table["present_success"]) / absent).where(absent > 0)
    cols = [*JOB_KEYS, "guideline", "present", "present_success", "present_failed", "success_rate_present",
            "success_rate_absent"]
    return table[cols].sort_values([*JOB_KEYS, "present", "guideline"], ascending=[True, True, True, False, True])


def never_delivered(df: pd.DataFrame, memory: str | Path | None = None) -> dict[tuple[str, str, str], list[str]]:
    """Per job: ids of the artifact that no step of any record delivered."""
    out: dict[tuple[str, str, str], list[str]] = {}
    delivered = presence(df).groupby(JOB_KEYS)["guideline"].agg(set).to_dict()
    for key, group in usable(df).groupby(JOB_KEYS):
        path = memory or next((m for m in group["memory"].dropna().unique()), None)
        if not path or key[2] == BASELINE:
            continue  # the baseline delivers nothing by design; nothing to report
        ids = [g.id for g in load_memory(path)[0]]
        out[key] = [gid for gid in ids if gid not in delivered.get(key, set())]
    return out


def dropped_ids(df: pd.DataFrame) -> dict[tuple[str, str, str], set[str]]:
    """Per job: ids some step left out to fit a budget (the strategy's budget_tokens or the context policy)."""
    out: dict[tuple[str, str, str], set[str]] = {}
    for rec in usable(df).itertuples(index=False):
        steps = getattr(rec, "dropped", None)
        steps = steps if isinstance(steps, list) else []
        out.setdefault((rec.run_dir, rec.job, rec.strategy), set()).update(i for step in steps for i in step)
    return out


def split_never_delivered(df: pd.DataFrame, memory: str | Path | None = None
                          ) -> dict[tuple[str, str, str], tuple[list[str], list[str]]]:
    """Per job: (never delivered because dropped by a budget, never selected at all)."""
    dropped = dropped_ids(df)
    out = {}
    for key, ids in never_delivered(df, memory).items():
        cut = dropped.get(key, set())
        out[key] = ([i for i in ids if i in cut], [i for i in ids if i not in cut])
    return out


def job_lines(job: str, by_budget: list[str], unselected: list[str]) -> list[str]:
    """What a job never delivered, id lists wrapped to the terminal's width."""
    def listed(label: str, ids: list[str]) -> str:
        return fmt.wrap(f"  {label} ({len(ids)})" + (f": {', '.join(ids)}" if ids else ""), indent="    ")
    return [f"{job}: {len(by_budget) + len(unselected)} guideline(s) never delivered",
            listed("dropped by budget", by_budget), listed("never selected", unselected)]


def guideline_table(rows: pd.DataFrame) -> str:
    """One job's per-guideline outcome table; the job is its heading, so its columns are only the figures."""
    shown = rows[["guideline", "present", "present_success", "present_failed"]].copy()
    shown.columns = ["guideline", "present", "succeeded", "failed"]
    for col, name in (("success_rate_present", "success if present"),
                      ("success_rate_absent", "success if absent")):
        shown[name] = rows[col].map(lambda v: "-" if pd.isna(v) else f"{100 * v:.1f}%")
    return "\n".join("  " + line for line in fmt.plain(shown).splitlines())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="+", help="run directories or results.jsonl files")
    parser.add_argument("--memory", help="memory artifact to audit against (default: each record's memory path)")
    args = parser.parse_args(argv)
    df = load_records(args.runs, overlap="keep")  # guidelines per run_dir and job: runs never pooled
    if df.empty:
        print("no records found", file=sys.stderr)
        return 1
    try:
        never = split_never_delivered(df, args.memory)
    except MemoryFileError as exc:
        print(f"analysis.audit: {exc} (the records' memory path, relative to where the sweep ran; "
              "--memory PATH names the artifact)", file=sys.stderr)
        return 2
    several = df["run_dir"].nunique() > 1

    def heading(run_dir: str, job: str) -> str:
        return f"{job} ({run_dir})" if several else job

    for (run_dir, job, _), (by_budget, unselected) in never.items():
        print("\n".join(job_lines(heading(run_dir, job), by_budget, unselected)))
    for (run_dir, job, _), rows in outcome_by_guideline(df).groupby(JOB_KEYS, sort=False):
        print(f"\n{heading(run_dir, job)}: per guideline, records where it was present")
        print(guideline_table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
