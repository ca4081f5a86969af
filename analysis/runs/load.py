"""Run directories -> pandas, at three grains. Reads run files only; never imports the runner.

Grains (inspect_ai's idea: the log is the API, analysis offers DataFrames at several grains):

* ``load_records(paths)`` — one row per task x trial: every field of a ``results.jsonl`` record (see README,
  "Record schema": run, job, benchmark, split, model, strategy, trial, task_id, success, reward, steps, error,
  prompt_tokens, cached_tokens, completion_tokens, memory_tokens, cost_usd, delivered, step_usage, ...) plus
  ``run_dir`` (the folder holding the file), ``source`` (``file:line``) and ``scenario_id`` (the record's own,
  else the 7-hex prefix of an AppWorld id ``<7hex>_<n>``, else null).
* ``jobs_frame(records)`` — one row per run x job: counts, infra errors, success, token and cost totals.
* ``steps_frame(records)`` — one row per agent step: the step's usage (prompt / completion / cached / memory
  tokens, cost, latency) and the guideline ids delivered at that step (``delivered_ids``, ``n_delivered``).

Malformed lines are reported with file:line and skipped, never silently.

Several runs are never silently pooled as extra trials: when two run directories hold the same episode
(benchmark, task set, split, model, request assembly, strategy, memory artifact, task, trial: analysis.runs.identity),
``load_records`` raises ``RunsOverlap`` (the CLIs exit 2 naming both runs) unless ``overlap="pool"``
(``--pool-runs``, ``make ... POOL=1``) renumbers the later runs' trials after the earlier ones' and says that
trial seeds repeat. The same results.jsonl reached twice (a path given twice, or a run inside another given run)
is always an error.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any, Callable, Iterable

import pandas as pd

from analysis import fmt
from analysis.runs.cells import ASSEMBLY_FIELDS, overlap_message, pool_runs, run_overlaps, unknown_artifacts
from analysis.runs.corruption import corruption_labels
from analysis.runs.ground_truth import ground_truth_labels
from analysis.runs.identity import artifact_meta, checked, filled, memory_artifact, memory_labels
from analysis.statistics.metrics import BASELINE
from harness.row import RESULTS, read_rows  # the row of results.jsonl and its one reader (plain definitions)
from harness.row import latest_attempts as row_latest_attempts  # the one latest-attempt rule

KEYS = ["run", "job", "benchmark", "split", "model", "strategy", "assembly"]
STEP_COLUMNS = ["step", "prompt_tokens", "completion_tokens", "cached_tokens", "memory_tokens", "cost_usd",
                "latency_s", "delivered_ids", "n_delivered"]
_APPWORLD_ID = re.compile(r"^([0-9a-f]{7})_\d+$")


class RunsOverlap(ValueError):
    """Two runs hold the same episodes, or one results file was given twice: pooling them would count extra trials."""


def find_results(paths: Iterable[str | Path]) -> list[Path]:
    found: list[Path] = []
    seen: dict[Path, Path] = {}  # resolved file -> the path it was reached from
    for p in map(Path, paths):
        if p.is_file() and p.name == RESULTS:
            files = [p]
        elif p.is_dir():
            files = sorted(p.rglob(RESULTS))
        else:
            raise FileNotFoundError(f"no run directory or {RESULTS} at {p}")
        for f in files:
            if f.resolve() in seen:
                raise RunsOverlap(f"{f} is given twice (from {seen[f.resolve()]} and {p}): give each run once")
            seen[f.resolve()] = p
            found.append(f)
    return found


def add_pool_option(parser: argparse.ArgumentParser) -> None:
    """`--pool-runs`, shared by every analysis CLI that reads several runs."""
    parser.add_argument("--pool-runs", action="store_true",
                        help="count runs that hold the same episodes (cell, task, trial) as extra trials, trials "
                             "renumbered (trial seeds repeat across runs). Default: such runs are refused (exit 2)")


def scenario_of(task_id: str) -> str | None:
    """AppWorld's scenario id: the 7-hex prefix of `<7hex>_<n>`; None for other benchmarks' ids."""
    m = _APPWORLD_ID.match(str(task_id))
    return m.group(1) if m else None


def load_records(paths: Iterable[str | Path], warn: Callable[[str], None] | None = None,
                 dedupe: bool = True, overlap: str = "refuse") -> pd.DataFrame:
    """Every record of every results.jsonl under `paths` (run dirs, parent dirs or files).

    dedupe: one record per (run_dir, job, task_id, trial): the highest `attempt` (an infra episode run again
    on resume), and of equal attempts the last complete line. How many were dropped is warned and kept in
    `df.attrs["dropped"]` ({"superseded": n, "duplicates": m}).
    overlap: runs holding the same episode are "refuse"d (RunsOverlap), or "pool"ed as extra trials (trials
    renumbered; the original in `trial_in_run`), or "keep" as they are (for callers that group by run_dir)."""
    if overlap not in ("refuse", "pool", "keep"):
        raise ValueError(f"overlap must be refuse, pool or keep, not {overlap!r}")
    warn = warn or (lambda msg: print(fmt.wrap(f"warning: {msg}"), file=sys.stderr))
    rows = []
    for path in find_results(paths):
        def skipped(lineno: int, reason: str, torn: bool, path: Path = path) -> None:  # torn: cut off by a kill
            warn(f"{path}:{lineno}: skipped {'torn last' if torn else 'malformed'} line ({reason})")

        for lineno, record in read_rows(path, skipped):  # the harness's one reader of results.jsonl
            row = record.columns()  # usage spelled as columns by role (`user_cost_usd`), the mapping kept beside
            row["usage"] = {role: dict(figures) for role, figures in record.usage.items()}
            row["run_dir"] = str(path.parent)
            row["source"] = f"{path}:{lineno}"
            row["memory_artifact"], row["memory_sha"] = memory_artifact(row)  # part of the cell's identity
            rows.append(row)
    # one task-set reading for every rule below (episode cells, overlaps, comparisons): old packaged records filled
    for row, task_set in zip(rows, filled(row.get("task_set") for row in rows)):
        if task_set is not None:
            row["task_set"] = task_set
    dropped = {"superseded": 0, "duplicates": 0}
    if dedupe:
        rows, dropped = latest_attempts(rows)
        if dropped["duplicates"] or dropped["superseded"]:
            warn(f"kept one record per episode: dropped {dropped['duplicates']} duplicate(s) and "
                 f"{dropped['superseded']} superseded attempt(s)")
    if overlap != "keep":
        clashes = run_overlaps(rows)
        if clashes and overlap == "refuse":
            raise RunsOverlap(overlap_message(clashes))
        if unknown := unknown_artifacts(clashes):
            raise RunsOverlap(unknown)
        for line in pool_runs(rows, clashes):
            warn(line)
    df = pd.DataFrame(rows)
    df.attrs["dropped"] = dropped
    if df.empty:
        return df
    for key in KEYS:
        if key not in df:
            df[key] = None
    if "trial" not in df:
        df["trial"] = 0
    if "error" not in df:
        df["error"] = None
    own = df["scenario_id"] if "scenario_id" in df else pd.Series(None, index=df.index, dtype=object)
    df["scenario_id"] = own.where(own.notna(), df["task_id"].map(scenario_of))
    df["success"] = df["success"].astype(bool)
    df["assembly"] = assembly_labels(df)
    df["strategy"] = ground_truth_labels(df)
    df["strategy"] = variant_labels(df)
    df["strategy"] = consolidation_labels(df)
    df["strategy"] = provenance_labels(df)
    df["strategy"] = memory_labels(df)  # a second memory artifact is its own row (analysis.runs.identity)
    df["strategy"] = corruption_labels(df)  # memory corrupted on purpose says so (analysis.runs.corruption)
    served = served_labels(df)
    if "user_model" in df:  # a user simulator on the agent's served model is named as the agent is
        df["user_model"] = df["user_model"].where(df["user_model"] != df["model"], served)
    df["model"] = served
    return df


def load_compared(paths: Iterable[str | Path], pool_runs: bool = False,
                  shared_tasks: bool = False) -> tuple[pd.DataFrame, list[str]]:
    """What every analysis command that compares strategies reads: `load_records` (runs holding the same episodes
    refused unless `pool_runs`), compared like with like (analysis.runs.identity.checked: ValueError across task sets
    unless `shared_tasks`), and the lines to print above its output (shared task ids, memory artifact ids)."""
    return checked(load_records(paths, overlap="pool" if pool_runs else "refuse"), shared_tasks)


def load_for_command(prog: str, args: argparse.Namespace) -> tuple[pd.DataFrame, list[str]] | None:
    """`load_compared` for a command line's `runs`, `--pool-runs` and `--shared-tasks`; None after printing, as
    `memdeliv <prog>: ...`, why nothing can be compared (a missing run, runs holding the same episodes, task sets
    that differ, no records): the command exits 2."""
    try:
        records, above = load_compared(args.runs, args.pool_runs, args.shared_tasks)
        if records.empty:
            raise ValueError(f"no records found under {', '.join(map(str, args.runs))}")
    except (FileNotFoundError, ValueError) as exc:
        fmt.refuse(prog, exc)
        return None
    return records, above


# a record's `memory_provenance` (harness/memory/provenance.py) that must show wherever the strategy is named
SHOWN_PROVENANCE = ("IN-SAMPLE", "unknown provenance")


# a served model's label names its server in a word, so the label fits the table's model column
SERVER_WORDS = {"local llama.cpp": "local"}


def served_labels(df: pd.DataFrame) -> pd.Series:
    """`smollm2-135m-instruct.q4_1 (local)`, not `openai/smollm2-...`: a model the harness served itself (record
    `model_server`, "local llama.cpp") reached through LiteLLM's OpenAI-compatible route, which is not OpenAI."""
    if "model_server" not in df:
        return df["model"]
    local = df["model_server"].notna()
    alias = df["model"].astype(str).str.split("/", n=1).str[-1]
    server = df["model_server"].astype(str).map(lambda name: SERVER_WORDS.get(name, name))
    return df["model"].where(~local, alias + " (" + server + ")")


def variant_labels(df: pd.DataFrame) -> pd.Series:
    """`core_retrieval (top_k=3)`: a cell of one strategy with its options set apart (record `strategy_variant`,
    e.g. the dose experiment), so each setting is its own row everywhere; `family()` gives the strategy back."""
    if "strategy_variant" not in df:
        return df["strategy"]
    variant = df["strategy_variant"]
    return df["strategy"].where(variant.isna(), df["strategy"].astype(str) + " (" + variant.astype(str) + ")")


def consolidation_labels(df: pd.DataFrame) -> pd.Series:
    """`full [lossy, target 12]`, `full [no consolidation]`, `full [text consolidation]`: memory built by `make
    memory` with other than the default (lossless) consolidation, read from the `_meta` of the artifact the record
    names (`memory`), so each mode is its own row. Only rows whose strategy used it (a `memory_provenance`; `none`
    records name the sweep's memory too)."""
    if "memory" not in df:
        return df["strategy"]
    used = df["memory_provenance"].notna() if "memory_provenance" in df else df["strategy"] != BASELINE
    tags = {m: _consolidation_tag(m) for m in df.loc[used, "memory"].dropna().unique()}
    tag = df["memory"].where(used).map(tags)
    return df["strategy"].where(tag.isna(), df["strategy"].astype(str) + " [" + tag.astype(str) + "]")


def _consolidation_tag(memory: str) -> str | None:
    meta = artifact_meta(memory)  # gone or not an artifact: {}, no tag
    mode = meta.get("consolidation")
    if mode == "lossy":
        return f"lossy, target {meta.get('lossy_target')}"
    labels: dict[Any, str] = {"none": "no consolidation", "text": "text consolidation"}
    return labels.get(mode)  # lossless (altk): the default


def family(label: str) -> str:
    """The strategy a label names, without its variant, ground-truth or provenance tags."""
    return str(label).split(" [")[0].split(" (")[0]


def provenance_labels(df: pd.DataFrame) -> pd.Series:
    """`full [IN-SAMPLE]`: memory learned from the evaluated tasks (allow_in_sample=true); `full [unknown
    provenance]`: a hand-written artifact. Part of the strategy's name, so every table, plot and comparison
    keeps such rows apart and says why."""
    if "memory_provenance" not in df:
        return df["strategy"]
    label = df["memory_provenance"].where(df["memory_provenance"].isin(SHOWN_PROVENANCE))
    return df["strategy"].where(label.isna(), df["strategy"].astype(str) + " [" + label.astype(str) + "]")


def latest_attempts(rows: list[dict]) -> tuple[list[dict], dict[str, int]]:
    """Per (run_dir, job, task_id, trial), the row harness/row.py's one latest-attempt rule keeps; file order kept."""
    def episode(row: dict) -> tuple:
        job = row.get("job") or tuple(row.get(k) for k in ("benchmark", "split", "model", "strategy"))  # hand-made rows
        return row["run_dir"], job, str(row["task_id"]), row.get("trial", 0)

    kept, dropped = row_latest_attempts(rows, episode)
    return [rows[i] for i in sorted(kept.values())], dropped


def assembly_labels(df: pd.DataFrame) -> pd.Series:
    """Per record, `key=value` of the assembly settings that vary across the loaded records ("" when none
    does), so tables and plots split by placement / context policy / answer mode exactly when a run swept them."""
    label = pd.Series("", index=df.index, dtype=object)
    for key, default in ASSEMBLY_FIELDS.items():
        values = df[key] if key in df else pd.Series(default, index=df.index, dtype=object)
        values = values.where(values.notna(), default if default is not None else "default").astype(str)
        if values.nunique() > 1:
            label = label.where(label == "", label + ", ") + f"{key}=" + values
    return label


def jobs_frame(records: pd.DataFrame) -> pd.DataFrame:
    """One row per run x job (all records; every error is a failure in `success`, infra ones too as in tau2-bench's
    leaderboard convention; infra errors are counted in `infra_errors`, the others in `other_errors`)."""
    if records.empty:
        return pd.DataFrame(columns=KEYS)
    infra = records["error"] == "infra"
    failed = records["error"].notna() & ~infra
    frame = records.assign(infra=infra, failed=failed, ok_success=(records["success"].astype(bool) & ~infra))
    aggs: dict[str, tuple[str, Any]] = {
        "records": ("task_id", "size"), "tasks": ("task_id", "nunique"), "trials": ("trial", "nunique"),
        "infra_errors": ("infra", "sum"), "other_errors": ("failed", "sum"), "success": ("ok_success", "mean")}
    aggs |= {c: (c, _sum_or_nan) for c in ("prompt_tokens", "cached_tokens", "completion_tokens", "memory_tokens",
                                     "cost_usd") if c in frame}
    if "started_at" in frame:
        aggs["started_at"] = ("started_at", "min")
    return frame.groupby(KEYS, dropna=False, sort=False).agg(**aggs).reset_index()


def _sum_or_nan(values: pd.Series) -> float:
    """A total where any record lacks the figure (cached tokens, cost) is unknown, not a partial sum."""
    return float(values.sum()) if values.notna().all() else float("nan")


def steps_frame(records: pd.DataFrame) -> pd.DataFrame:
    """One row per agent step, from each record's `step_usage` (and `delivered` when usage rows lack ids)."""
    rows = []
    if records.empty or "step_usage" not in records:
        return pd.DataFrame(columns=[*KEYS, "task_id", "trial", "success", *STEP_COLUMNS])
    for rec in records.itertuples(index=False):
        usage = rec.step_usage if isinstance(rec.step_usage, list) else []
        delivered = getattr(rec, "delivered", None)
        delivered = delivered if isinstance(delivered, list) else []
        for i, step in enumerate(usage):
            ids = step.get("delivered_ids")
            if ids is None:
                ids = delivered[i] if i < len(delivered) else []
            rows.append({
                **{k: getattr(rec, k) for k in KEYS}, "task_id": rec.task_id, "trial": rec.trial,
                "success": rec.success, "step": step.get("index", i),
                "prompt_tokens": step.get("prompt_tokens"), "completion_tokens": step.get("completion_tokens"),
                "cached_tokens": step.get("cached_tokens"), "memory_tokens": step.get("memory_tokens"),
                "cost_usd": step.get("cost_usd"), "latency_s": step.get("latency_s"),
                "delivered_ids": list(ids), "n_delivered": len(ids),
            })
    return pd.DataFrame(rows, columns=[*KEYS, "task_id", "trial", "success", *STEP_COLUMNS])


def load_memory_history(run_dirs: Iterable[str | Path],
                        warn: Callable[[str], None] | None = None) -> pd.DataFrame:
    """Memory growth over adaptation, from `<run>/memory/**/history*.jsonl` (absent files: empty frame).

    Format read (one JSON object per line, one line per update of the memory artifact):
        {"update": 3, "guidelines": 12, "tokens": 840, "strategy": "ace", "job": "...", "at": "..."}
    `update` (int, required): the adaptation step (episode or curator call) after which the size was taken;
    `guidelines`: the number of guidelines / playbook bullets, or the list of them (its length is used);
    `tokens` (optional): the rendered artifact's size in tokens. Missing `strategy` = the folder name.
    """
    warn = warn or (lambda msg: print(fmt.wrap(f"warning: {msg}"), file=sys.stderr))
    rows = []
    for run_dir in map(Path, run_dirs):
        for path in sorted((run_dir / "memory").rglob("history*.jsonl")) if (run_dir / "memory").is_dir() else []:
            for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
                if not line.strip():
                    continue
                try:
                    entry = json.loads(line)
                    size = entry["guidelines"]
                    size = len(size) if isinstance(size, list) else int(size)
                    rows.append({"run_dir": str(run_dir), "file": str(path), "update": int(entry["update"]),
                                 "guidelines": size, "tokens": entry.get("tokens"),
                                 "strategy": entry.get("strategy") or path.parent.name, "job": entry.get("job")})
                except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
                    warn(f"{path}:{lineno}: skipped malformed history line ({type(exc).__name__}: {exc})")
    return pd.DataFrame(rows, columns=["run_dir", "file", "update", "guidelines", "tokens", "strategy", "job"])
