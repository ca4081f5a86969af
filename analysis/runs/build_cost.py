"""The one-off cost of building each strategy's memory, and that cost amortised over deployment tasks.

IBM's comparisons count only the tokens of delivering memory; building it costs too. Per (benchmark, split,
model, strategy), from the files the records point at (record field `memory`, and the run directory):

* `none`: 0.
* a guideline artifact made by harness/memory/build.py: `build.json` beside it, `extractor_usage` (the
  extraction and consolidation calls share that counter) plus `consolidation_usage` if a build reports it apart;
* an ACE playbook from harness/memory/ace_adapt.py: `<playbook>.history.jsonl` beside it, the Reflector and Curator
  `usage` of every update (ACE reports tokens, not cost);
* `ace_online`: 0 where its rows carry the update's calls (each episode's update, Reflector and Curator, is
  billed on that episode's row: its usage role `learning`, usd_learning/task; `strategy_calls` in rows of schema
  1: usd_strategy/task, analysis.runs.costs), else (runs from before) the job's own
  `<run>/memory/<job slug>/history.jsonl` (its learning happens during the run);
* the simulated world's artifact (`_meta.kind: simulated`) and an experiences artifact (exp_rag, long_context): 0,
  no model built them (the collection run is not a build cost, as for `make memory`);
* anything else (a hand-written sample): unknown (nan), never 0.
Amortised: build / N, N = `--amortise-over` or, by default, the episodes evaluated in that row (tasks x trials).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from analysis.runs.identity import artifact_meta
from analysis.statistics.metrics import BASELINE, GROUP, with_assembly

COLUMNS = ["build_tokens", "build_cost_usd", "build_source"]


def _slug(text: str) -> str:
    """The runner's job-directory name (run-dir layout: <run>/memory/<slug>/)."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in text.replace("/", "__"))


def _usage_sum(usages) -> tuple[float, float]:
    tokens, cost, priced = 0, 0.0, True
    for u in usages:
        tokens += int(u.get("prompt_tokens") or 0) + int(u.get("completion_tokens") or 0)
        if u.get("cost_usd") is None:
            priced = False
        else:
            cost += float(u["cost_usd"])
    return float(tokens), (cost if priced else float("nan"))


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _history(rows: list[dict]) -> tuple[float, float]:
    usages = [u for row in rows for u in (row.get("usage") or {}).values() if isinstance(u, dict)]
    return _usage_sum(usages) if usages else (0.0, 0.0)


def build_cost(strategy: str, memory: str | None, run_dir: str | None = None, job: str | None = None,
               billed_per_episode: bool = False) -> dict:
    """{build_tokens, build_cost_usd, build_source} for one job."""
    if strategy == BASELINE:
        return {"build_tokens": 0.0, "build_cost_usd": 0.0, "build_source": "none: no memory"}
    # a job that learned online keeps its learning history in the run (ACE's Reflector/Curator calls: rows with
    # `stream`, where an offline playbook's trim at load has none), whatever the strategy is called; its memory
    # artifact, if any, is only where it started
    history = Path(run_dir) / "memory" / _slug(job) / "history.jsonl" if run_dir and job else None
    rows = _rows(history) if history is not None and history.is_file() else []
    if any("stream" in row for row in rows):
        if billed_per_episode:  # never counted twice
            return {"build_tokens": 0.0, "build_cost_usd": 0.0, "build_source": "learning billed per episode"}
        tokens, cost = _history(rows)
        return {"build_tokens": tokens, "build_cost_usd": cost, "build_source": str(history)}
    if not memory:
        return {"build_tokens": np.nan, "build_cost_usd": np.nan, "build_source": "no memory artifact recorded"}
    path = Path(memory)
    history = path.with_name(path.stem + ".history.jsonl")
    if history.is_file():
        tokens, cost = _history(_rows(history))
        return {"build_tokens": tokens, "build_cost_usd": cost, "build_source": str(history)}
    if artifact_meta(path).get("kind") == "experiences":  # no model call; a build.json beside it is make memory's
        return {"build_tokens": 0.0, "build_cost_usd": 0.0, "build_source": "experiences: no model call"}
    build = path.parent / "build.json"
    if build.is_file():
        info = json.loads(build.read_text(encoding="utf-8"))
        parts = [info.get(k) for k in ("extractor_usage", "consolidation_usage") if isinstance(info.get(k), dict)]
        if parts:
            tokens, cost = _usage_sum(parts)
            return {"build_tokens": tokens, "build_cost_usd": cost, "build_source": str(build)}
    if artifact_meta(path).get("kind") == "simulated":
        return {"build_tokens": 0.0, "build_cost_usd": 0.0, "build_source": "simulated world: no model built it"}
    return {"build_tokens": np.nan, "build_cost_usd": np.nan, "build_source": f"unknown (no build.json or "
                                                                             f"history beside {memory})"}


def add_build_cost(summary: pd.DataFrame, records: pd.DataFrame, amortise_over: int | None = None) -> pd.DataFrame:
    """summary + build_tokens, build_cost_usd, build_source, amortised_over, build_tokens/task,
    build_cost/task, tokens+build/task. A row mixing several memory artifacts takes their sum."""
    out = summary.copy()
    records = with_assembly(records)
    extra = []
    for _, row in out.iterrows():
        key = tuple(row[c] for c in GROUP)
        mask = np.logical_and.reduce([records[c] == v for c, v in zip(GROUP, key)])
        jobs = records.loc[mask, ["memory", "run_dir", "job"]] if "memory" in records else \
            records.loc[mask, ["run_dir", "job"]].assign(memory=None)
        jobs = jobs.drop_duplicates(subset=["memory", "run_dir", "job"])
        # schema 2 bills an update as `learning`; schema 1 added it to the strategy's calls
        made = [records[c].notna() for c in ("learning_calls", "strategy_calls") if c in records]
        billed = set(map(tuple, records.loc[mask & np.logical_or.reduce(made), ["run_dir", "job"]]
                         .itertuples(index=False))) if made else set()
        costs = [build_cost(row["strategy"], m if isinstance(m, str) else None, r, j, (r, j) in billed)
                 for m, r, j in jobs[["memory", "run_dir", "job"]].itertuples(index=False)]
        seen = {c["build_source"]: c for c in costs}.values()  # the same artifact counts once
        n = amortise_over or int(row.get("records") or 0) or np.nan
        tokens = sum(c["build_tokens"] for c in seen)
        cost = sum(c["build_cost_usd"] for c in seen)
        extra.append({"build_tokens": tokens, "build_cost_usd": cost,
                      "build_source": "; ".join(c["build_source"] for c in seen), "amortised_over": n,
                      "build_tokens/task": tokens / n, "build_cost/task": cost / n})
    extra_df = pd.DataFrame(extra, index=out.index)
    out = pd.concat([out, extra_df], axis=1)
    if "tokens/task" in out:
        out["tokens+build/task"] = out["tokens/task"] + out["build_tokens/task"]
    return out
