"""`none`: the baseline. Delivers nothing, so every token difference against it is memory's cost."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from strategies.base import EMPTY, Delivery, StepView, StrategyBase, TaskView
from strategies.declaration import Declaration
from strategies.plan_block import Count, PlanEstimate
from strategies.registry import StrategyContext


def nothing(memory: Optional[str], count: Count, opts: Any) -> PlanEstimate:
    return PlanEstimate(0.0, "no memory")


@dataclass
class NoMemory(StrategyBase):
    name: str = "none"
    # takes no options (a typo like strategy.options.top_k=5 on `none` alone is an error); memory= is ignored: the
    # baseline's rows carry no provenance label
    declaration = Declaration(uses_memory=False, plan=nothing)

    def deliver(self, task: TaskView, step: StepView) -> Delivery:
        return EMPTY

    @classmethod
    def create(cls, ctx: StrategyContext) -> "NoMemory":
        return cls(options=dict(ctx.options))
