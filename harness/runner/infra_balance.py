"""The end-of-job line when the strategies of this job's cell have different infra rates in the run so far.

The rule and its words are harness/infra_rates.py's, the same as analysis's warnings, over the same cell and the
same episodes (the latest attempt of each), so the line a job ends with is the table's WARNING line. It reads the
rows the job read at its start plus those it wrote (harness/runner/loop.py), never the file again.
"""

from __future__ import annotations

from typing import Iterable, Optional

from harness import infra_rates
from harness.row import Row, latest_per_episode

ASSEMBLY = infra_rates.CELL[3:]  # placement, context_policy, answer_mode


def infra_warning(rows: Iterable[Row], job: str) -> Optional[str]:
    """One line naming each strategy's infra errors / episodes when their rates differ; None when they agree."""
    by_job: dict[str, list[Row]] = {}
    for row in rows:
        by_job.setdefault(row.get("job"), []).append(row)
    if not by_job.get(job):
        return None
    cell = cell_of(by_job[job][0])
    counts: dict[str, tuple[int, int]] = {}
    for mine in (rows for rows in by_job.values() if cell_of(rows[0]) == cell):
        latest, _ = latest_per_episode(mine)  # an infra episode run again on resume counts once
        label = infra_rates.strategy_label(mine[0].get("strategy"), mine[0].get("strategy_variant"))
        counts[label] = (sum(r.get("error") == infra_rates.INFRA for r in latest.values()), len(latest))
    text = infra_rates.differ_text(counts, so_far=True)
    if not text:
        return None
    # the assembly settings the run varies name the cell, as analysis's `assembly` column does
    varying = [k for k in ASSEMBLY if len({rows[0].get(k) for rows in by_job.values()}) > 1]
    setting = ", ".join(f"{k}={by_job[job][0].get(k)}" for k in varying)
    return (f"{infra_rates.where((*cell[:3], setting))}: {text}; they count as failed trials (tau2-bench leaderboard "
            "convention), see error_detail in results.jsonl")


def cell_of(row: Row) -> tuple:
    return tuple(row.get(k) for k in infra_rates.CELL)
