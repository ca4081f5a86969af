"""`python -m analysis.export_tau2 RUN_DIR... [--out DIR]`: one tau2-bench results file per τ² cell.

A cell is (benchmark = domain, split, model, request assembly, strategy), as in the tables. Each record's
trajectory is already a one-simulation tau2 `Results` file; the export joins a cell's simulations into one
file that `tau2 view --dir DIR` opens and tau2's `compute_metrics` reads, with the same Pass^k as our table.

Plain JSON, no tau2 import (analysis reads run files only); tests check the files against tau2's own model.
What keeps the numbers equal:
- every counted record is one simulation; a record without a trajectory (an episode that produced no result)
  becomes an empty simulation ended as `agent_error` with reward 0, so it still counts as a failed trial;
- a record that is not a success (an infra error, or an online update that failed after the episode) gets reward
  0 if its trajectory says otherwise, the recorded reward kept in `reward_info.info.memdeliv`;
- `info.num_trials` is the cell's trial count, `agent_info.llm` / `user_info.llm` the record's models, and a
  simulation without `agent_cost` / `user_cost` gets the record's `cost_usd` / `user_cost_usd` (tau2's cost column).
Cell facts tau2 has no field for (runs, job, strategy, memory, assembly) sit under a top-level `memdeliv` key,
which tau2's model ignores.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pandas as pd

from analysis import fmt
from analysis.runs.load import load_records
from analysis.runs.named import runs_named
from analysis.statistics.metrics import GROUP, valid, with_assembly

SUCCESS_TOLERANCE = 1e-6  # tau2's is_successful: |reward - 1| <= 1e-6
CELL_FACTS = ("run", "job", "memory", "memory_provenance", "placement", "context_policy", "answer_mode", "agent",
              "judge_model", "task_set")


class ExportError(ValueError):
    """A cell that cannot be written as a tau2 results file (a trajectory file missing, a task never seen)."""


def _successful(reward: float) -> bool:
    return abs(float(reward) - 1.0) <= SUCCESS_TOLERANCE


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in str(text)).strip("_")


def cell_name(key: tuple) -> str:
    """tau2_retail__test__openai_gpt-4.1__full (+ __<assembly> when a run varied it)."""
    named = dict(zip(GROUP, key))
    parts = [named[k] for k in ("benchmark", "split", "model", "strategy")]
    if named.get("assembly"):
        parts.append(named["assembly"])
    return "__".join(_slug(p) for p in parts)


def _read(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ExportError(f"{path}: trajectory file named by its record is missing") from None
    except json.JSONDecodeError as exc:
        raise ExportError(f"{path}: not a JSON tau2 results file ({exc.msg})") from None


def _empty_simulation(rec: dict[str, Any]) -> dict[str, Any]:
    """An episode with no trajectory of its own (its machinery failed): a failed trial in tau2's terms."""
    when = str(rec.get("started_at") or datetime.now(timezone.utc).isoformat())
    note = f"memdeliv: no trajectory (error {rec.get('error')}: {rec.get('error_detail')})"
    return {"id": f"{rec['task_id']}__t{rec['trial']}__{_slug(rec.get('run') or '')}__no_trajectory",
            "task_id": str(rec["task_id"]), "start_time": when, "end_time": when, "duration": 0.0,
            "termination_reason": "agent_error", "reward_info": {"reward": 0.0, "info": {"note": note}},
            "messages": [], "trial": int(rec["trial"]), "seed": rec.get("seed")}


def _simulation(rec: dict[str, Any], results: dict[str, Any] | None) -> dict[str, Any]:
    """The record's simulation, its reward agreeing with the record's success (what our table counts)."""
    if results is None:
        return _empty_simulation(rec)
    sims = results.get("simulations") or []
    if len(sims) != 1:
        raise ExportError(f"{rec['source']}: its trajectory holds {len(sims)} simulations, expected 1")
    sim = dict(sims[0])
    sim["trial"] = int(rec["trial"])  # --pool-runs renumbers trials; the file follows the records
    reward_info = dict(sim.get("reward_info") or {"reward": 0.0})
    reward = float(reward_info.get("reward") or 0.0)
    if not bool(rec["success"]) and _successful(reward):
        info = dict(reward_info.get("info") or {})
        info["memdeliv"] = {"recorded_reward": reward, "error": rec.get("error"),
                            "why": "the record is a failed trial (tables count it so); reward set to 0"}
        reward_info.update(reward=0.0, info=info)
    sim["reward_info"] = reward_info
    for ours, theirs in (("cost_usd", "agent_cost"), ("user_cost_usd", "user_cost")):  # tau2's cost columns
        if sim.get(theirs) is None and isinstance(rec.get(ours), (int, float)) and not pd.isna(rec[ours]):
            sim[theirs] = float(rec[ours])
    return sim


def _task_set_key(rec: dict[str, Any]) -> tuple[str, str]:
    task_set = rec.get("task_set")
    return str(rec.get("benchmark")), json.dumps(task_set if isinstance(task_set, dict) else None, sort_keys=True)


def _tasks_seen(cell: pd.DataFrame, loaded: dict[str, dict[str, Any]],
                records: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """task id -> tau2 task: from the cell's own trajectories; a task none of them holds (its episodes produced no
    trajectory) from another record of the same benchmark and task set (a retail "5" is not an airline "5", nor
    v1.0.1's "5" the packaged one)."""
    seen: dict[str, dict[str, Any]] = {}
    for results in loaded.values():
        for task in results.get("tasks") or []:
            seen.setdefault(str(task.get("id")), task)
    wanted = {str(t) for t in cell["task_id"]} - set(seen)
    sets = {_task_set_key(r) for r in cell.to_dict("records")}
    for rec in records[records["task_id"].astype(str).isin(wanted)].to_dict("records"):
        if _task_set_key(rec) in sets and isinstance(rec.get("trajectory"), str) and str(rec["task_id"]) not in seen:
            for task in _read(Path(rec["run_dir"]) / rec["trajectory"]).get("tasks") or []:
                seen.setdefault(str(task.get("id")), task)
    return seen


def _info(first: dict[str, Any] | None, cell: pd.DataFrame) -> dict[str, Any]:
    """tau2's `Info`: the stored one, with this cell's trial count and models (ours say "see config.yaml")."""
    info: dict[str, Any] = json.loads(json.dumps(first["info"])) if first else {
        "git_commit": "", "max_steps": 0, "max_errors": 0, "seed": None,
        "user_info": {"implementation": "user_simulator"}, "agent_info": {"implementation": "memdeliv_agent"},
        "environment_info": {"domain_name": str(cell["benchmark"].iloc[0]).removeprefix("tau2_"), "policy": ""}}
    info["num_trials"] = int(cell["trial"].nunique())
    info["agent_info"]["llm"] = str(cell["model"].iloc[0])
    user = cell["user_model"].dropna() if "user_model" in cell else pd.Series(dtype=object)
    info["user_info"]["llm"] = str(user.iloc[0]) if len(user) else info["user_info"].get("llm")
    return info


def _facts(cell: pd.DataFrame) -> dict[str, Any]:
    out: dict[str, Any] = {"strategy": str(cell["strategy"].iloc[0]), "records": len(cell),
                           "runs": sorted({str(r) for r in cell["run_dir"]}),
                           "exported_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    for key in CELL_FACTS:
        if key in cell:
            values = [v for v in cell[key].tolist() if v is not None and not (isinstance(v, float) and pd.isna(v))]
            distinct = {json.dumps(v, sort_keys=True, default=str): v for v in values}
            if distinct:
                out[key] = next(iter(distinct.values())) if len(distinct) == 1 else list(distinct.values())
    return out


def cell_results(cell: pd.DataFrame, records: pd.DataFrame) -> dict[str, Any]:
    """One tau2 `Results` document (plain JSON) for a cell's counted records (`valid()`: infra = failed);
    `records`: the other records, where a task without a trajectory in this cell is looked up."""
    cell = cell.sort_values(["task_id", "trial"], key=lambda s: s.astype(str) if s.name == "task_id" else s)
    loaded = load_trajectories(cell)
    sims, own = [], []
    for rec in cell.to_dict("records"):
        results = loaded.get(rec["source"])
        sims.append(_simulation(rec, results))
        if results is not None:
            own.append(results)
    tasks = _tasks_seen(cell, loaded, records)
    missing = sorted({s["task_id"] for s in sims} - set(tasks))
    if missing:
        raise ExportError(f"task(s) {', '.join(missing)} have no trajectory in the given runs, and tau2's metrics "
                          f"need each task's definition")
    wanted = dict.fromkeys(s["task_id"] for s in sims)
    return {"timestamp": datetime.now(timezone.utc).isoformat(), "info": _info(own[0] if own else None, cell),
            "tasks": [tasks[t] for t in wanted], "simulations": sims, "memdeliv": _facts(cell)}


def load_trajectories(records: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """record source (`file:line`) -> its tau2 results document, for records that name a trajectory."""
    out = {}
    for rec in records.to_dict("records"):
        rel = rec.get("trajectory")
        if isinstance(rel, str) and rel:
            out[rec["source"]] = _read(Path(rec["run_dir"]) / rel)
    return out


def export(runs: list[str], out_dir: Path | None = None, pool: bool = False,
           warn=lambda msg: print(f"warning: {msg}", file=sys.stderr)) -> tuple[list[Path], list[str]]:
    """Writes one file per τ² cell; returns (files written, cells refused with the reason)."""
    df = load_records(runs, warn=warn, overlap="pool" if pool else "refuse")
    if df.empty:
        raise ExportError(f"no records in {', '.join(runs)}")
    df = with_assembly(df[df["benchmark"].astype(str).str.startswith("tau2_")])
    if df.empty:
        raise ExportError(f"no τ² records in {', '.join(runs)} (tau2 results files hold τ² episodes only)")
    out_dir = out_dir or Path(df["run_dir"].iloc[0]) / "analysis" / "tau2"
    counted = valid(df)
    written, refused = [], []
    for key, cell in counted.groupby(GROUP, sort=False, dropna=False):
        name = cell_name(key)
        try:
            document = cell_results(cell, counted)
        except ExportError as exc:
            refused.append(f"{name}: {exc}")
            continue
        out_dir.mkdir(parents=True, exist_ok=True)
        path = out_dir / f"{name}.json"
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(document, indent=2, ensure_ascii=False), encoding="utf-8")
        tmp.replace(path)
        written.append(path)
    return written, refused


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="*", help="run directories")
    parser.add_argument("--out", type=Path, help="folder for the files (default <first run>/analysis/tau2)")
    parser.add_argument("--pool-runs", action="store_true", help="runs holding the same episodes as extra trials")
    args = parser.parse_args(argv)
    if not runs_named("export-tau2", args.runs):
        return 2
    try:
        written, refused = export(args.runs, args.out, args.pool_runs)
    except (FileNotFoundError, ValueError) as exc:
        fmt.refuse("export-tau2", exc)
        return 2
    for path in written:
        print(f"wrote {path}")
    for line in refused:
        fmt.refuse("export-tau2", f"not written: {line}")
    if written:
        print(f"open them with: .venv/bin/tau2 view --dir {written[0].parent}")
    return 2 if refused or not written else 0


if __name__ == "__main__":
    raise SystemExit(main())
