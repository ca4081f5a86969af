"""Token ledger: per agent step and per task, every other role's calls kept apart by role (harness/usage.py), and
the provider's retries: the one accounting path of an episode.

The runner opens one ledger per episode (`episode()`); everything the episode calls writes to it: the agent's
steps (harness/assembly/step.py), the user simulator and τ²'s judge (their adapters find it with `current()`),
the strategy's own model calls (a ranker, a paid embedding: strategies.base.report_call, which `episode()` binds
here, so strategies import no harness code) and every ModelClient retry (harness/serving/model_client.py counts
into the ledger's ProviderStats). An online learner's calls after its episode (ACE's Reflector and Curator) go
to a ledger of their own (`learning()`), the `learning` role of that episode's row. `record_fields()` are the
row's `usage` by role and its step and retry columns. Totals are sums of what the provider reported. A total
over calls where any
call lacks a figure (cached tokens, cost) is None rather than a partial sum that would understate it.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import asdict, dataclass, field
from functools import partial
from typing import Any, Callable, Iterable, Iterator, Optional

from harness.serving.model_client import ProviderStats, Usage, count_tokens, provider_stats
import harness.usage as by_role
from harness.serving.providers import declared_provider
from strategies import ModelCall
from strategies.base import calls_to


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


class MemoryTokenCounter:
    """Counts a delivered block once per distinct text (a `full` block is identical at every step).

    A provider served here may count memory its own way (`Provider.memory_tokens`): the simulated model, which
    has no tokenizer, counts it as its world reads it, so a step's memory tokens and its draw's are one figure."""

    def __init__(self, model: str):
        self.model = model
        served = declared_provider(model)
        own = served.memory_tokens if served is not None else None
        self._count = own if own is not None else partial(count_tokens, model)
        self._cache: dict[str, int] = {}
        self._lock = threading.Lock()

    def __call__(self, text: str) -> int:
        with self._lock:
            if text not in self._cache:
                self._cache[text] = self._count(text)
            return self._cache[text]


@dataclass
class Ledger:
    agent_steps: list[StepEntry] = field(default_factory=list)
    # every other role's calls, by role (harness/usage.py): the user simulator, τ²'s judge, the strategy's own
    # (strategies.base.report_call), an online learner's update (`learning()`), or a role a plugin names
    calls: dict[str, list[Any]] = field(default_factory=dict)
    provider: ProviderStats = field(default_factory=ProviderStats)  # retries of every call of the episode
    # memory-tool calls the agent step answered (harness/assembly/memory_calls.py): (ids given, an error?) each
    memory_calls: list[tuple[tuple[str, ...], bool]] = field(default_factory=list)
    memory_tools_offered: bool = False  # the row carries the memory-tool columns only when a tool was offered
    # told of each agent step as it is ledgered (the job's progress line, harness/runner/progress.py)
    on_step: Optional[Callable[[], None]] = field(default=None, repr=False, compare=False)
    role: str = "strategy"  # where report_call's calls go: the strategy's own, or `learning` after the episode

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
        if self.on_step is not None:
            self.on_step()
        return entry

    def add_call(self, role: str, usage: Any) -> None:
        """One model call of `role` (anything with prompt_tokens, completion_tokens, cost_usd)."""
        if role == "agent":
            raise ValueError("the agent's calls are steps: add_agent_step")
        self.calls.setdefault(role, []).append(usage)

    def add_memory_call(self, ids: Iterable[str], *, error: bool) -> None:
        self.memory_calls.append((tuple(ids), error))

    def memory_tool_fields(self) -> dict[str, Any]:
        if not self.memory_tools_offered:
            return {}
        return {"memory_tool_calls": len(self.memory_calls),
                "memory_tool_errors": sum(error for _, error in self.memory_calls),
                "memory_tool_ids": [list(ids) for ids, _ in self.memory_calls]}

    def add_user_call(self, usage: Usage) -> None:
        self.add_call("user", usage)

    def add_judge_call(self, usage: Usage) -> None:
        self.add_call("judge", usage)

    def add_strategy_call(self, call: ModelCall) -> None:
        self.add_call(self.role, call)

    def of(self, role: str) -> list[Any]:
        return list(self.agent_steps) if role == "agent" else self.calls.get(role, [])

    @property
    def user_calls(self) -> list[Any]:
        return self.of("user")

    @property
    def judge_calls(self) -> list[Any]:
        return self.of("judge")

    def usage(self) -> dict[str, dict[str, Any]]:
        """The episode's usage by role (harness/usage.py): every role that made a call, and IDLE's roles always."""
        roles = by_role.ordered([*by_role.IDLE, *self.calls])
        out = {role: by_role.of_calls(role, self.of(role)) for role in roles}
        return {role: figures for role, figures in out.items() if figures is not None}

    def record_fields(self) -> dict[str, Any]:
        """The ledger's share of a results.jsonl record, the same for every benchmark."""
        steps, timed = self.agent_steps, [*self.agent_steps, *(c for cs in self.calls.values() for c in cs)]
        return {"usage": self.usage(),
                "cache_write_tokens": by_role.sum_or_none(s.cache_write_tokens for s in steps),
                "memory_tokens": sum(s.memory_tokens for s in steps),
                # the agent's, the user simulator's and the judge's time (a strategy's call has no latency_s)
                "model_seconds": sum(getattr(c, "latency_s", 0.0) for c in timed),
                "answer_calls": sum(s.phase == "answer" for s in steps),
                "summarised_turns": sum(s.summarised_turns for s in steps),
                "delivered": [list(s.delivered_ids) for s in steps],
                "dropped": [sorted({*s.dropped_ids, *s.context_dropped_ids}) for s in steps],
                "step_usage": self.step_rows(), **self.memory_tool_fields(), **self.provider.fields()}

    def step_rows(self) -> list[dict[str, Any]]:
        rows = []
        for s in self.agent_steps:
            row = asdict(s)
            for key in ("delivered_ids", "dropped_ids", "context_dropped_ids"):
                row[key] = list(getattr(s, key))
            rows.append(row)
        return rows


_current: ContextVar[Optional[Ledger]] = ContextVar("memdeliv_episode_ledger", default=None)


@contextmanager
def episode(on_step: Optional[Callable[[], None]] = None) -> Iterator[Ledger]:
    """The ledger of one episode, current in this context (the episode's thread) for the block."""
    ledger = Ledger(on_step=on_step)
    token = _current.set(ledger)
    try:
        with provider_stats(ledger.provider), calls_to(ledger.add_strategy_call):
            yield ledger
    finally:
        _current.reset(token)


@contextmanager
def learning() -> Iterator[Ledger]:
    """A ledger for an online learner's update after its episode (ACE's Reflector and Curator): its calls are
    the `learning` role of that episode's row. A re-run inside the update is an episode of its own."""
    ledger = Ledger(role="learning")
    with calls_to(ledger.add_strategy_call):
        yield ledger


def current() -> Optional[Ledger]:
    """The ledger of the episode running in this context; None outside one (a benchmark called directly)."""
    return _current.get()
