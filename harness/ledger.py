"""Token ledger: per agent step and per task, plus the user simulator's calls kept apart.

Totals are sums of what the provider reported. A total over steps where any step lacks a figure
(cached tokens, cost) is None rather than a partial sum that would understate it.
"""

from __future__ import annotations

import threading
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable

from harness.serving.model_client import Usage, count_tokens


@dataclass(frozen=True)
class StepEntry:
    index: int
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int | None
    memory_tokens: int
    cost_usd: float | None
    latency_s: float
    delivered_ids: tuple[str, ...]
    cache_write_tokens: int | None = None
    dropped_ids: tuple[str, ...] = ()  # left out by the strategy's budget_tokens
    context_dropped_ids: tuple[str, ...] = ()  # left out by context_policy=priority_drop
    summarised_turns: int = 0  # conversation turns folded into the code-made summary
    phase: str = "act"  # act: a working step; answer: answer_mode=rebuild's extra call for the reply


_steps_lock = threading.Lock()
_steps_taken = 0  # agent steps ledgered in this process, for progress within long episodes (harness/runner/progress.py)


def steps_taken() -> int:
    with _steps_lock:
        return _steps_taken


def sum_or_none(values: Iterable[Any]) -> Any:
    values = list(values)
    if not values or any(v is None for v in values):
        return None
    return sum(values)


class MemoryTokenCounter:
    """Counts a delivered block once per distinct text (a `full` block is identical at every step)."""

    def __init__(self, model: str):
        self.model = model
        self._cache: dict[str, int] = {}
        self._lock = threading.Lock()

    def __call__(self, text: str) -> int:
        with self._lock:
            if text not in self._cache:
                self._cache[text] = count_tokens(self.model, text)
            return self._cache[text]


@dataclass
class Ledger:
    agent_steps: list[StepEntry] = field(default_factory=list)
    user_calls: list[Usage] = field(default_factory=list)
    judge_calls: list[Usage] = field(default_factory=list)  # τ²'s NL-assertion judge, kept apart like the user

    def add_agent_step(self, usage: Usage, memory_tokens: int, delivered_ids: Iterable[str], *,
                       dropped_ids: Iterable[str] = (), context_dropped_ids: Iterable[str] = (),
                       summarised_turns: int = 0, phase: str = "act") -> StepEntry:
        entry = StepEntry(
            index=len(self.agent_steps),
            prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens,
            cached_tokens=usage.cached_tokens,
            memory_tokens=memory_tokens,
            cost_usd=usage.cost_usd,
            latency_s=usage.latency_s,
            delivered_ids=tuple(delivered_ids),
            cache_write_tokens=usage.cache_write_tokens,
            dropped_ids=tuple(dropped_ids),
            context_dropped_ids=tuple(context_dropped_ids),
            summarised_turns=summarised_turns,
            phase=phase,
        )
        self.agent_steps.append(entry)
        global _steps_taken
        with _steps_lock:
            _steps_taken += 1
        return entry

    def add_user_call(self, usage: Usage) -> None:
        self.user_calls.append(usage)

    def add_judge_call(self, usage: Usage) -> None:
        self.judge_calls.append(usage)

    def totals(self) -> dict[str, Any]:
        steps, users, judges = self.agent_steps, self.user_calls, self.judge_calls
        return {
            "prompt_tokens": sum(s.prompt_tokens for s in steps),
            "cached_tokens": sum_or_none(s.cached_tokens for s in steps),
            "cache_write_tokens": sum_or_none(s.cache_write_tokens for s in steps),
            "completion_tokens": sum(s.completion_tokens for s in steps),
            "memory_tokens": sum(s.memory_tokens for s in steps),
            "cost_usd": sum_or_none(s.cost_usd for s in steps),
            "user_prompt_tokens": sum(u.prompt_tokens for u in users),
            "user_cached_tokens": sum_or_none(u.cached_tokens for u in users),
            "user_completion_tokens": sum(u.completion_tokens for u in users),
            "user_cost_usd": sum_or_none(u.cost_usd for u in users),
            "judge_calls": len(judges),
            "judge_prompt_tokens": sum(j.prompt_tokens for j in judges),
            "judge_cached_tokens": sum_or_none(j.cached_tokens for j in judges) if judges else 0,
            "judge_completion_tokens": sum(j.completion_tokens for j in judges),
            "judge_cost_usd": sum_or_none(j.cost_usd for j in judges) if judges else 0.0,
            "model_seconds": sum(s.latency_s for s in steps) + sum(u.latency_s for u in users)
                             + sum(j.latency_s for j in judges),
        }

    def record_fields(self) -> dict[str, Any]:
        """The ledger's share of a results.jsonl record, the same for every benchmark."""
        return {"steps": len(self.agent_steps), **self.totals(),
                "answer_calls": sum(s.phase == "answer" for s in self.agent_steps),
                "summarised_turns": sum(s.summarised_turns for s in self.agent_steps),
                "delivered": [list(s.delivered_ids) for s in self.agent_steps],
                "dropped": [sorted({*s.dropped_ids, *s.context_dropped_ids}) for s in self.agent_steps],
                "step_usage": self.step_rows()}

    def step_rows(self) -> list[dict[str, Any]]:
        rows = []
        for s in self.agent_steps:
            row = asdict(s)
            for key in ("delivered_ids", "dropped_ids", "context_dropped_ids"):
                row[key] = list(getattr(s, key))
            rows.append(row)
        return rows
