"""What `make plan` prices for a design, declared by the design itself (its declaration's `plan`), so the plan
(analysis/planning/plan_estimate.py) never branches on a strategy's name: the memory block its agent reads at a
step (counted from the artifact with the strategy's own rendering), what that figure stands for, and the design's
own model calls per episode by role (stated, not yet priced)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Optional, Sequence, TypeVar

T = TypeVar("T")
Count = Callable[[str], int]  # the run model's token counter (memory_kit.budget.token_counter)


@dataclass(frozen=True)
class PlanEstimate:
    block_tokens: float
    note: str
    calls: Mapping[str, float] = field(default_factory=dict)  # role -> expected calls per episode


NO_ARTIFACT = PlanEstimate(0.0, "no artifact yet")


def artifact_items(memory: Optional[str]) -> Optional[list[Any]]:
    """The artifact's guidelines, or None when there is no artifact (yet)."""
    if not memory or not Path(memory).is_file():
        return None
    from memory_kit.memory_file import load_memory

    return load_memory(memory)[0]


def median_window(items: Sequence[T], k: int, size: Callable[[T], int]) -> list[T]:
    """The k median-sized items: they stand for whatever retrieval picks."""
    ordered = sorted(items, key=size)
    start = max(0, len(ordered) // 2 - k // 2)
    return ordered[start:start + k]


def full_block(memory: Optional[str], count: Count, note: str = "full block (upper bound)") -> PlanEstimate:
    """Every guideline of the artifact (StrategyBase's default: an upper bound)."""
    from strategies.base import render_guidelines

    items = artifact_items(memory)
    return NO_ARTIFACT if items is None else PlanEstimate(float(count(render_guidelines(items))), note)
