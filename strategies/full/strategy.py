"""`full`: every guideline in the memory artifact, at every step (IBM's "full" setting).

The block never changes within a run, so it sits in the stable prompt prefix and providers can cache it.
With `budget_tokens` set, the lowest-support guidelines are dropped first (ties: later in the file first).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from strategies.base import Delivery, Guideline, StepView, StrategyBase, TaskView, guidelines_frame, render_guidelines
from memory_kit.budget import fit_budget, token_counter
from strategies.declaration import Declaration
from strategies.options import BlockOptions
from strategies.plan_block import Count, PlanEstimate, full_block
from strategies.registry import StrategyContext


def every_guideline(memory: Optional[str], count: Count, opts: Any) -> PlanEstimate:
    return full_block(memory, count, "every guideline")


@dataclass
class FullMemory(StrategyBase):
    name: str = "full"
    declaration = Declaration(options=BlockOptions, frame=guidelines_frame(), plan=every_guideline)
    guidelines: tuple[Guideline, ...] = ()
    count_tokens: Optional[Callable[[str], int]] = field(default=None, repr=False)
    _delivery: Delivery = field(init=False, repr=False)

    def __post_init__(self) -> None:
        opts = self.typed_options()
        budget, frame = opts.budget_tokens, self.declaration.delivered_frame(opts)
        self._delivery = fit_budget(self.guidelines, [g.support for g in self.guidelines],
                                    lambda kept, note: render_guidelines(kept, note=note, frame=frame),
                                    self.count_tokens or token_counter(None), budget)

    def deliver(self, task: TaskView, step: StepView) -> Delivery:
        return self._delivery

    @classmethod
    def create(cls, ctx: StrategyContext) -> "FullMemory":
        return cls(options=dict(ctx.options), guidelines=tuple(ctx.require_memory("full")),
                   count_tokens=token_counter(ctx.model))
