"""What a cell IS, so that analysis compares cells by identity, never by labels alone.

A cell's identity: benchmark, task set (the sha256 of its task file, record `task_set.tasks_sha256`), split,
model, strategy (+ variant, ground truth, consolidation), memory artifact (the sha256 of the file the strategy
delivered from) and request-assembly settings. Every analysis command (table, tables, report, power, recommend)
uses it:

* records of different identities are never pooled into one row: a strategy that ran with two memory artifacts in
  one comparison is two rows, each labelled by the artifact's short id (`full [mem 3fa2c1]`; `memory_lines` says
  which file and provenance each id is). Runs holding the same episodes of one identity are analysis.runs.load's
  overlap rule;
* strategies are compared only within one task set: records of one (benchmark, split, model, assembly) from
  different task files (tau2-bench v0.2.0 and v1.0.1 tasks share ids, not contents) exit 2 naming both sets,
  unless `--shared-tasks`, which compares them on the task ids every set has and says so above the output.

The artifact's fingerprint is the one the harness recorded when the job ran (`config.yaml`:
`jobs.<job>.identity.memory.sha256_16`, else `manifest.json`: `jobs.<job>.memory`), else `unknown` (labelled
`[mem unknown]`): never the file's sha256 at analysis time, which may not be what the run delivered.
"""

from __future__ import annotations

import argparse
import json
from functools import lru_cache
from pathlib import Path

import pandas as pd
import yaml

# CELL: strategies are compared within one (benchmark, split, model, assembly); BASELINE: the reference arm
from analysis.statistics.metrics import BASELINE, CELL
from harness import infra_rates  # `where`: a cell's parts that are set, joined (plain definitions)

CONFIG = "config.yaml"  # the harness's record of each job's identity: jobs.<job>.identity
MANIFEST = "manifest.json"  # the store's record of each job: jobs.<job>.memory, written when the job starts
UNKNOWN = "unknown"  # an artifact id the run did not record (older runs copied without config.yaml)
SHORT = 6  # hex digits of an artifact id in a label


class TaskSetsDiffer(ValueError):
    """Strategies of one comparison ran on different task files: their task ids are not the same tasks."""


PARTS = ("tasks_sha256", "split_sha256", "policy_sha256", "db_sha256")  # what makes a τ² task set
WORLD = "world_sha256"  # AppWorld: the world's own fingerprint (its data root), where recorded


def task_set_id(value) -> str | None:
    """The task set's fingerprint: 12 hex digits of tasks_sha256, then 6 of each other part the record has
    (split, policy, db, world: a changed policy is another experiment); None when the record has none."""
    if isinstance(value, dict) and value.get("tasks_sha256"):
        extra = [str(value[k])[:6] for k in (*PARTS[1:], WORLD) if value.get(k)]
        return "/".join([str(value["tasks_sha256"])[:12], *extra])
    return None


def _packaged_key(value) -> tuple | None:
    return (value.get("tau2"), value.get("domain"), value.get("tasks_sha256")) \
        if isinstance(value, dict) and value.get("source") == "packaged" else None


def filled(column) -> list:
    """Records written before the packaged policy and db were fingerprinted lack them; those are fixed by the
    tau2 package version, so they are read as a newer record's of the same version, domain and task file."""
    column = list(column)
    known: dict[tuple | None, dict] = {None: {}}
    for value in column:
        key = _packaged_key(value)
        if key and value.get("policy_sha256"):
            known.setdefault(key, {k: value[k] for k in ("policy_sha256", "db_sha256") if value.get(k)})
    return [{**known.get(_packaged_key(v), {}), **v} if isinstance(v, dict) else v for v in column]


def differing(values) -> list[str]:
    """The parts ('tasks', 'policy', ...) in which task-set fingerprints differ."""
    dicts = [v for v in values if isinstance(v, dict)]
    return [k.removesuffix("_sha256") for k in (*PARTS, WORLD) if len({str(d.get(k)) for d in dicts}) > 1]


def _task_set_name(value) -> str:
    prints = ", ".join(f"{k.removesuffix('_sha256')} {str(value[k])[:12]}…" for k in (*PARTS, WORLD)
                       if value.get(k))
    return f"{value.get('known_as') or 'unknown task file'} ({prints})"


def tag(label: str, text: str) -> str:
    """`full` -> `full [text]`; `full [unknown provenance]` -> `full [unknown provenance, text]` (one bracket, so
    analysis.runs.deliveries.base_strategy and analysis.runs.load.family still find the strategy)."""
    label = str(label)
    return f"{label[:-1]}, {text}]" if label.endswith("]") else f"{label} [{text}]"


def add_shared_tasks_option(parser: argparse.ArgumentParser) -> None:
    """`--shared-tasks`, for every analysis CLI that compares strategies."""
    parser.add_argument("--shared-tasks", action="store_true",
                        help="compare strategies that ran on different task sets (task files) on the task ids "
                             "every set has, labelled. Default: refused (exit 2), as an id may name another task")


def comparable(records: pd.DataFrame, shared: bool = False) -> tuple[pd.DataFrame, dict[tuple, str]]:
    """`records` where every comparison stays within one task set. Two task sets in one (benchmark, split,
    model, assembly): TaskSetsDiffer naming both, or with `shared` the records of the task ids every set has
    (a strategy that ran on several sets becomes a row per set) and a note per such cell {cell key: line}."""
    if records.empty or "task_set" not in records:
        return records, {}
    sets_of = pd.Series(filled(records["task_set"]), index=records.index, dtype=object)
    frame = records.assign(_set=sets_of.map(task_set_id), _ts=sets_of,
                           **({} if "assembly" in records else {"assembly": ""}))
    notes, keep = {}, pd.Series(True, index=records.index)
    labels = records["strategy"].copy()
    for key, g in frame.groupby(CELL, sort=False, dropna=False):
        sets = list(dict.fromkeys(g["_set"].dropna()))
        if len(sets) < 2:
            continue
        firsts = {s: g.loc[g["_set"] == s, "_ts"].iloc[0] for s in sets}
        names = {s: _task_set_name(v) for s, v in firsts.items()}
        what = " and ".join(differing(firsts.values())) or "fingerprint"
        runs = {s: ", ".join(sorted({str(r) for r in g.loc[g["_set"] == s, "run_dir" if "run_dir" in g else "run"]}))
                for s in sets}
        where = infra_rates.where(key)
        if not shared:
            raise TaskSetsDiffer(f"{where}: strategies ran on task sets that differ in {what}, so their runs "
                                 f"are different experiments: " + "; ".join(f"{names[s]} in {runs[s]}" for s in sets)
                                 + ". Compare runs of one task set, or pass --shared-tasks (make ... SHARED_TASKS=1) "
                                   "to compare them on the task ids both sets have")
        common = set.intersection(*(set(g.loc[g["_set"] == s, "task_id"].astype(str)) for s in sets))
        keep.loc[g.index] = g["task_id"].astype(str).isin(common)
        several = g.groupby("strategy")["_set"].nunique()
        for strategy in several[several > 1].index:
            rows = g.index[g["strategy"] == strategy]
            labels.loc[rows] = [tag(s, f"tasks {t}") for s, t in zip(g.loc[rows, "strategy"], g.loc[rows, "_set"])]
        notes[key] = (f"{where}: compared across {len(sets)} task sets that differ in {what} "
                      f"({'; '.join(names.values())}) on the "
                      f"{len(common)} task ids they share (--shared-tasks): an id may name a different task in "
                      "each set")
    return records.assign(strategy=labels)[keep], notes


# --- the run's files, read once per version (a long-lived viewer or notebook sees a rewritten file anew) -------

def _stamp(path: Path) -> tuple[int, int] | None:
    """(mtime, size) of a file, None when there is none: part of every cache key below."""
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


@lru_cache(maxsize=256)
def _jobs(path: Path, stamp: tuple[int, int] | None) -> tuple[dict[str, dict], str | None]:
    if stamp is None:
        return {}, None
    try:
        jobs = (yaml.safe_load(path.read_text(encoding="utf-8")) or {}).get("jobs") or {}
        return {key: job.get("identity") or {} for key, job in jobs.items() if isinstance(job, dict)}, None
    except OSError:
        return {}, None
    except (yaml.YAMLError, AttributeError) as exc:
        return {}, f"{path}: not a run config ({exc})"


def job_identities(run_dir: str | Path) -> dict[str, dict]:
    """{job key: the identity the harness recorded for it} from `<run_dir>/config.yaml` ({} when there is none);
    ValueError when the file is not a run config."""
    path = Path(run_dir) / CONFIG
    jobs, error = _jobs(path, _stamp(path))
    if error:
        raise ValueError(error)
    return jobs


@lru_cache(maxsize=256)
def _meta(path: Path, stamp: tuple[int, int] | None) -> dict:
    try:
        with open(path, encoding="utf-8") as f:
            meta = json.loads(f.readline()).get("_meta")
    except (OSError, ValueError, AttributeError):  # gone or not an artifact
        return {}
    return meta if isinstance(meta, dict) else {}


def artifact_meta(path: str | Path) -> dict:
    """A memory artifact's `_meta` (its first line: kind, consolidation, corrupted, ...); {} when the file is gone
    or is not an artifact."""
    return _meta(Path(path), _stamp(Path(path)))


# --- memory artifacts --------------------------------------------------------------------------------------

def uses_memory(row: dict) -> bool:
    """The record's strategy delivered from a memory artifact (`memory_provenance` is set only then; records
    from before it: any strategy but `none`)."""
    if "memory_provenance" in row:
        return row.get("memory_provenance") is not None
    return row.get("strategy") != BASELINE and bool(row.get("memory"))


def memory_artifact(row: dict) -> tuple[str | None, str | None]:
    """(path, fingerprint) of the artifact the record's strategy delivered from (ACE's `playbook` option wins
    over `memory`); (None, None) when it delivered none."""
    if not uses_memory(row):
        return None, None
    try:  # a broken config.yaml: the file's sha256 below still tells artifacts apart
        ident = job_identities(row["run_dir"]).get(str(row.get("job")), {}) if row.get("run_dir") else {}
    except ValueError:
        ident = {}
    options = (ident.get("strategy") or {}).get("options") or {}
    path = options.get("playbook") or row.get("memory")
    if not path:
        return None, None
    recorded = ident.get("memory") or _manifest_memory(row)
    if recorded.get("path") == path and recorded.get("sha256_16"):
        return str(path), str(recorded["sha256_16"])
    return str(path), UNKNOWN  # the file now may hold other contents than the run delivered


def _manifest_memory(row: dict) -> dict:
    """The artifact the run's store recorded in manifest.json when the job started ({} for older runs)."""
    if not row.get("run_dir"):
        return {}
    path = Path(row["run_dir"]) / MANIFEST
    return (_manifest_jobs(path, _stamp(path)).get(str(row.get("job"))) or {}).get("memory") or {}


@lru_cache(maxsize=256)
def _manifest_jobs(path: Path, stamp: tuple[int, int] | None) -> dict[str, dict]:
    try:
        jobs = json.loads(path.read_text(encoding="utf-8")).get("jobs") or {}
    except (OSError, ValueError, AttributeError):
        return {}
    return {k: v for k, v in jobs.items() if isinstance(v, dict)} if isinstance(jobs, dict) else {}


def short_id(sha) -> str:
    """An artifact's id as labels show it: the first SHORT hex digits of its fingerprint, or `unknown`."""
    return UNKNOWN if sha == UNKNOWN else str(sha)[:SHORT]


def memory_labels(df: pd.DataFrame) -> pd.Series:
    """The strategy label, with ` [mem <id>]` where one (benchmark, split, model, assembly, strategy) holds
    records of several memory artifacts."""
    if "memory_sha" not in df or df["memory_sha"].isna().all():
        return df["strategy"]
    counts = df.groupby([*CELL, "strategy"], dropna=False)["memory_sha"].transform("nunique")
    several = (counts > 1) & df["memory_sha"].notna()
    return df["strategy"].where(~several, [tag(s, f"mem {short_id(m)}") for s, m in zip(df["strategy"],
                                                                                          df["memory_sha"])])


def memory_lines(df: pd.DataFrame) -> list[str]:
    """'mem 3fa2c1 = strategies/samples/tau2_sample.jsonl (unknown provenance)', for each id a label shows, and
    a line for each artifact a run did not record ('mem unknown = ...'), labelled or not."""
    if "memory_sha" not in df:
        return []
    labelled = df["strategy"].astype(str).str.contains(r"\bmem (?:[0-9a-f]|unknown)", regex=True)
    shown = df[labelled | (df["memory_sha"] == UNKNOWN)]
    provenance = shown["memory_provenance"] if "memory_provenance" in shown else pd.Series(None, index=shown.index)
    lines: list[str] = []
    for sha, path, prov in zip(shown["memory_sha"], shown["memory_artifact"], provenance):
        line = f"mem {short_id(sha)} = {path}" + (f" ({prov})" if isinstance(prov, str) else "") + \
            (": the run recorded no fingerprint of what it delivered (no config.yaml or manifest.json entry)"
             if sha == UNKNOWN else "")
        if line not in lines:
            lines.append(line)
    return lines


def checked(records: pd.DataFrame, shared: bool = False) -> tuple[pd.DataFrame, list[str]]:
    """`records` compared like with like (`comparable`: TaskSetsDiffer across task sets unless `shared`) and the
    lines a view prints above its table: task sets compared on shared ids, the memory artifact ids its labels show."""
    records, notes = comparable(records, shared=shared)
    return records, [*notes.values(), *(f"Memory: {line}" for line in memory_lines(records))]
