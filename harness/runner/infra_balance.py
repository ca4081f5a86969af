"""Infra errors per strategy of one model, read back from the run at the end of each job.

Infra episodes (still `infra` after retries) count as failed trials (tau2-bench's leaderboard convention), but a
strategy that causes them (a memory block a provider times out on, say) must also be visible: the end-of-job
line warns when the strategies of one benchmark/split/model/request assembly recorded so far have different
infra rates, however small the difference. analysis.tables warns by the same rule.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

from harness.errors import INFRA
from harness.store import RunStore, latest_per_episode

CELL = ("benchmark", "split", "model", "placement", "context_policy", "answer_mode")


def infra_warning(run_dir: str | Path, job: str) -> str | None:
    """One line naming each strategy's infra errors / episodes when their rates differ; None when they agree."""
    by_job: dict[str, list[dict]] = {}
    for row in RunStore(run_dir).records():
        by_job.setdefault(row.get("job"), []).append(row)
    if not by_job.get(job):
        return None
    cell = tuple(by_job[job][0].get(k) for k in CELL)
    counts: dict[str, tuple[int, int]] = {}
    for rows in by_job.values():
        if tuple(rows[0].get(k) for k in CELL) == cell:
            latest, _ = latest_per_episode(rows)  # an infra episode run again on resume counts once
            variant = rows[0].get("strategy_variant")  # dose cells of one strategy are rows of their own
            name = f"{rows[0].get('strategy')}({variant})" if variant else rows[0].get("strategy")
            counts[name] = (sum(r.get("error") == INFRA for r in latest.values()), len(latest))
    if len(counts) < 2 or len({Fraction(n, total) for n, total in counts.values()}) < 2:
        return None
    shown = ", ".join(f"{s} {n}/{total}" for s, (n, total) in counts.items())
    return (f"{'/'.join(str(c) for c in cell[:3])}: infra errors differ between strategies so far ({shown}): a "
            "strategy may cause them; they count as failed trials (tau2-bench leaderboard convention), see "
            "error_detail in results.jsonl")
