"""The run's rows as one job knows them: read once when it starts (resume, the budget's spend, the infra-balance
line) plus every row it appends. A job never reads results.jsonl again (tests/test_kill_resume.py counts)."""

from __future__ import annotations

from collections import Counter
from typing import Any, Iterable

from harness.errors import INFRA
from harness.row import Row, latest_per_episode


class JobRows:
    """`all`: every row of the run directory; `mine`: this job's (every attempt); `latest`: the row that counts
    per (task_id, trial) at the start; `done`: the episodes a resume skips (all recorded ones, less those whose
    latest row is infra when `retry_infra`); `attempts`: the attempt number of each episode run again."""

    def __init__(self, key: str, rows: Iterable[Row], retry_infra: bool):
        self.key = key
        self.all = list(rows)
        self.mine = [r for r in self.all if r.get("job") == key]
        self.latest, self.dropped = latest_per_episode(self.mine)
        self.done = {k for k, r in self.latest.items() if not (retry_infra and r.get("error") == INFRA)}
        self.attempts = {k: r.attempt_number + 1 for k, r in self.latest.items() if k not in self.done}

    def settled(self) -> list[Row]:
        """The rows of the episodes a resume skips (progress counts them)."""
        return [r for k, r in self.latest.items() if k in self.done]

    def add(self, row: Row) -> None:
        self.all.append(row)
        self.mine.append(row)

    def totals(self) -> dict[str, Any]:
        """The job's counts over every launch: provider retries and recoveries of all attempts, infra errors
        among the rows that count, and the rows that do not (superseded attempts, duplicates)."""
        latest, dropped = latest_per_episode(self.mine)
        return {"retried": sum(r.get("provider_retries") or 0 for r in self.mine),
                "recovered": sum(r.get("provider_recovered") or 0 for r in self.mine),
                "infra_errors": sum(r.get("error") == INFRA for r in latest.values()),
                "errors": dict(sorted(Counter(r["error"] for r in latest.values() if r.get("error")).items())),
                "superseded": dropped["superseded"], "duplicates_dropped": dropped["duplicates"]}

    def updates_lost(self) -> int:
        """Online updates lost after their retries, over every row of the job."""
        return sum(bool(r.get("update_lost")) for r in self.mine)

    def cache_unreported(self) -> bool:
        """Whether a row with prompt tokens has no cached-token figure (the provider reported none)."""
        return any(r.get("cached_tokens") is None for r in self.mine if r.get("prompt_tokens"))
