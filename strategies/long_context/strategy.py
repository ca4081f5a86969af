"""`long_context`: the long-context baseline of EvoMemBench and Evo-Memory: every past train episode,
condensed, in the prompt at every step, no selection and no learning.

What does not fit is left to the request assembly: the Delivery's `refit` keeps the earliest episodes (artifact
order, the train split's task order) and drops the later ones first, with the omission note inside the block
(memory_kit/budget.py), when the whole request would overflow the model's window (harness/assembly/). With
`budget_tokens` the block is capped the same way up front. The artifact is the experiences file exp_rag reads
(memory_kit/experiences.py, built by `make experiences` on train).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from strategies.base import Delivery, Guideline, StepView, StrategyBase, TaskView
from memory_kit.budget import fit_budget, token_counter
from strategies.declaration import Declaration

from memory_kit.experiences import load_experiences, render_experiences
from strategies.options import budget_field
from strategies.plan_block import NO_ARTIFACT, Count, PlanEstimate, artifact_items
from strategies.registry import StrategyContext


@dataclass(frozen=True)
class LongContextOptions:
    include_feedback: bool = True  # each episode's outcome shown, as exp_rag's
    budget_tokens: Optional[int] = budget_field()  # later episodes dropped first


def every_experience(memory: Optional[str], count: Count, opts: Any) -> PlanEstimate:
    items = artifact_items(memory)
    if items is None:
        return NO_ARTIFACT
    return PlanEstimate(float(count(render_experiences(items))), "every experience")


def check_experiences(path: Optional[str]) -> None:
    load_experiences(path, "long_context")


@dataclass
class LongContext(StrategyBase):
    name: str = "long_context"
    declaration = Declaration(options=LongContextOptions, plan=every_experience, check_memory=check_experiences)
    experiences: tuple[Guideline, ...] = ()
    count_tokens: Optional[Callable[[str], int]] = field(default=None, repr=False)
    _delivery: Delivery = field(init=False, repr=False)

    def __post_init__(self) -> None:
        opts = self.typed_options()
        # equal priorities: fit_budget keeps the items shown first, so the later episodes go first
        self._delivery = fit_budget(self.experiences, [0] * len(self.experiences),
                                    lambda kept, note: render_experiences(kept, note, opts.include_feedback),
                                    self.count_tokens or token_counter(None), opts.budget_tokens,
                                    noun="experiences")

    def deliver(self, task: TaskView, step: StepView) -> Delivery:
        return self._delivery

    @classmethod
    def create(cls, ctx: StrategyContext) -> "LongContext":
        return cls(options=dict(ctx.options), experiences=tuple(load_experiences(ctx.memory_path, "long_context")),
                   count_tokens=token_counter(ctx.model))
