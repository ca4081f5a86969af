"""A sequential sweep's record (`make sweep ... UNTIL=decided`, harness/waves.py): its looks.jsonl (the design on
the first line, one look a line after it), each look taken from the run's records by the sequential boundary
(analysis.statistics.sequential), and the sentences `make sweep` and `make recommend` print from it."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Sequence

import pandas as pd

from analysis import fmt
from analysis.decision import decide, per_task_metric, shared_pairs
from analysis.statistics.metrics import CELL, valid, with_assembly
from analysis.statistics.sequential import BOUNDARY, Comparison, Design, Look, take_look

LOOKS = "looks.jsonl"  # written by harness/store (RunStore.append_look)


def design_json(design: Design, wave: int, delta_pts: float) -> dict[str, Any]:
    return {"design": {"strategies": list(design.strategies), "pool": design.pool, "trials": design.blocks,
                       "alpha": design.alpha, "delta": delta_pts, "wave": wave, "boundary": BOUNDARY}}


def design_of(doc: dict[str, Any]) -> tuple[Design, int, float]:
    d = doc["design"]
    return Design(tuple(d["strategies"]), int(d["pool"]), float(d["delta"]) / 100, int(d["trials"]),
                  float(d["alpha"])), int(d["wave"]), float(d["delta"])


def look_json(look: Look) -> dict[str, Any]:
    out = {k: v for k, v in look.__dict__.items() if k != "comparisons"}
    out["comparisons"] = [c.__dict__ for c in look.comparisons]
    return json.loads(json.dumps(out))


def look_of(doc: dict[str, Any]) -> Look:
    return Look(**{**doc, "running": tuple(doc["running"]), "shown": tuple(doc["shown"]),
                   "crossed": tuple(tuple(c) for c in doc["crossed"]),
                   "comparisons": tuple(Comparison(**c) for c in doc["comparisons"])})


def read(run_dir: str | Path) -> tuple[Design, int, float, list[Look]] | None:
    """(design, wave, DELTA points, looks) of a sequential run; None for a fixed one."""
    path = Path(run_dir) / LOOKS
    if not path.is_file():
        return None
    docs = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    if not docs:
        return None
    design, wave, delta = design_of(docs[0])
    return design, wave, delta, [look_of(d) for d in docs[1:]]


def take(records: pd.DataFrame, design: Design, history: Sequence[Look], last: str | None = None) -> Look:
    """The next look on the run's records: the strategies still running, on the tasks every one of them ran
    (each task's mean over its trials; infra counted as failures, as `make recommend` does)."""
    running = history[-1].still if history else design.strategies
    ok = with_assembly(valid(records[records["strategy"].isin(running)]))
    groups = shared_pairs(dict(tuple(ok.groupby("strategy", sort=False))))
    metric = {s: per_task_metric(g, 1) for s, g in groups.items()}
    tasks = sorted(set.intersection(*(set(m.index) for m in metric.values()))) if metric else []
    arrays = {s: m.reindex(tasks).to_numpy(dtype=float) for s, m in metric.items()}
    return take_look(design, history, arrays, price_order(records, running), last)


def price_order(records: pd.DataFrame, running: Sequence[str]) -> list[str]:
    """Cheapest first, by `make recommend`'s price (tokens per task with the build amortised)."""
    cell = records[records["strategy"].isin(running)]
    key = next(iter(with_assembly(cell).groupby(CELL, sort=False, dropna=False).groups))
    prices = decide(key, cell).per_task
    return sorted(running, key=lambda s: (prices.get(s, math.inf), running.index(s)))


def episodes(records: pd.DataFrame, design: Design) -> int:
    return int(records["strategy"].isin(design.strategies).sum())


def lines(design: Design, wave: int, delta_pts: float, looks: Sequence[Look], ran: int) -> list[str]:
    """What the sweep and `make recommend` print: the design, each look, the answer, the episodes."""
    t, size = design.blocks, trials_text(design.blocks)
    out = [f"Sequential decision ({BOUNDARY}, Jennison & Turnbull 2000; margin DELTA = {delta_pts:g} points, alpha = "
           f"{design.alpha:g} over every look, Holm across {len(design.strategies)} strategies; waves of {wave} tasks "
           f"x {size} from a pool of {design.pool} tasks): the sequential boundary decides, not the fixed-size test "
           "(docs/deciding.md)."]
    for look in looks:
        out.append(look_line(look, size))
    if not looks or not looks[-1].stop:
        out.append(f"No decision yet: the sweep has not stopped (after look {len(looks)}); rerun it to go on.")
    else:
        out.append(_answer(design, delta_pts, looks[-1], size))
    fixed = design.pool * t * len(design.strategies)
    out.append(f"Episodes: {ran:,} run; the fixed design: {fixed:,} ({design.pool} tasks x {size} x "
               f"{len(design.strategies)} strategies), {ran / fixed:.2f} of it.")
    return out


def trials_text(t: int) -> str:
    return f"{t} trial" + ("" if t == 1 else "s")


def look_line(look: Look, size: str) -> str:
    if not look.comparisons:
        return (f"Look {look.index} at {look.tasks} tasks x {size}: no test (fewer than 20 paired tasks); running "
                + ", ".join(f"`{s}`" for s in look.running) + ".")
    rates = ", ".join(f"`{s}`" for s in look.running)
    said = [f"nominal level {fmt.pvalue(look.level)}"]
    said += [f"dropped `{s}` (shown more than the margin below `{by}`)" for s, by in look.dropped.items()]
    said.append("shown non-inferior: " + (", ".join(f"`{s}`" for s in look.shown) if look.shown else "no strategy"))
    return f"Look {look.index} at {look.tasks} tasks x {size} ({rates}): " + "; ".join(said) + "."


def _answer(design: Design, delta_pts: float, look: Look, size: str) -> str:
    at = f"look {look.index} ({look.tasks} tasks x {size})"
    if look.stop == "futile":
        need = f"about {look.need:,} tasks" if look.need else "more tasks than any pool"
        return (f"No decision: at {at} no strategy can be shown within {delta_pts:g} points of every other in the pool "
                f"of {design.pool} tasks: it would take {need}, even at differences as favourable as their 90% bounds "
                f"(80% power). To settle it, a pool of that size (LIMIT=), or a wider margin (DELTA=).")
    label = {"pool": " (the pool is spent: the decision at that size, by the boundary's last look, which spends "
                     "what is left of alpha)",
             "budget": " (the budget is spent: the decision at that size, by this look's boundary; rerun with a "
                       "higher BUDGET to go on at the next wave)"}.get(look.stop or "", "")
    if look.choice is None:
        return (f"No decision yet: at {at}{label} no strategy is shown to be within {delta_pts:g} points of every "
                "other still running, so no strategy is recommended.")
    others = [s for s in look.still if s != look.choice]
    why = ("the only strategy still running" if not others else
           f"the cheapest of {len(look.shown)} shown non-inferior" if len(look.shown) > 1 else
           "the only strategy shown non-inferior")
    return (f"Recommended: {look.choice}, {why} at margin {delta_pts:g} points (at most {delta_pts:g} points below "
            f"every other still running), stopped at {at}{label}.")


def stopped_early(run_dir: str | Path) -> dict[str, str]:
    """strategy -> 'stopped at look k' for a sequential run's strategies that ran fewer waves than the pool
    holds (dropped, or the whole sweep stopped), for the tables' labels; {} for a fixed run."""
    seq = read(run_dir)
    if seq is None or not seq[3]:
        return {}
    design, _, _, looks = seq
    out = {s: f"dropped at look {lk.index}" for lk in looks for s in lk.dropped}
    last = looks[-1]
    if last.stop and last.tasks < design.pool:
        out.update({s: f"stopped at look {last.index}" for s in last.still})
    return out



def stopped_text(run_dir: str | Path) -> str:
    """One line for the tables: which rows stopped before the pool's end, at which look, and why."""
    labels = stopped_early(run_dir) if Path(run_dir).is_dir() else {}
    if not labels:
        return ""
    seq = read(run_dir)
    assert seq is not None
    pool = seq[0].pool
    return "; ".join(f"`{s}` {why}" for s, why in labels.items()) + (
        f", of a pool of {pool} tasks: by design, their rows hold fewer tasks (make recommend reads the looks).")
