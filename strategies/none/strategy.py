"""`none`: the baseline. Delivers nothing, so every token difference against it is memory's cost."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional

from strategies.base import EMPTY, Delivery, StepView, StrategyBase, TaskView
from strategies.plan_block import PlanEstimate
from strategies.registry import StrategyContext


@dataclass
class NoMemory(StrategyBase):
    name: str = "none"
    uses_memory = False  # memory= is ignored: the baseline's rows carry no provenance label
    known_options = ()  # takes none: a typo like strategy.options.top_k=5 on `none` alone is an error

    def deliver(self, task: TaskView, step: StepView) -> Delivery:
        return EMPTY

    @classmethod
    def plan_estimate(cls, memory: Optional[str], count: Callable[[str], int], options: dict[str, Any]) -> PlanEstimate:
        return PlanEstimate(0.0, "no memory")

    @classmethod
    def create(cls, ctx: StrategyContext) -> "NoMemory":
        return cls(options=dict(ctx.options))
