"""`protocol_only`: a control arm. The memory header and instruction `full` wraps its guidelines in, with no
guideline, at every step (agent-memory-bench's "protocol" arm; docs/controls.md).

`protocol_only − none` is the effect of being told that memory follows, with none to read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Optional

from strategies.base import Delivery, StepView, StrategyBase, TaskView, Trajectory, memory_frame
from strategies.registry import StrategyContext

CONTROL = "protocol_only"  # the row's `control_arm`: analysis reads the arm by it (analysis/views/controls.py)
DELIVERY = Delivery((), memory_frame())


@dataclass
class ProtocolOnly(StrategyBase):
    name: str = "protocol_only"
    uses_memory = False  # the frame is the same whatever memory= names: no provenance label, as `none`
    known_options = ()

    def deliver(self, task: TaskView, step: StepView) -> Delivery:
        return DELIVERY

    def record_facts(self, trajectory: Optional[Trajectory]) -> Mapping[str, Any]:
        return {"control_arm": CONTROL}

    @classmethod
    def create(cls, ctx: StrategyContext) -> "ProtocolOnly":
        return cls(options=dict(ctx.options))
