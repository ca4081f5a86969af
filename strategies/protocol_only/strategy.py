"""`protocol_only`: a control arm. The frame a design wraps its memory in (its tag, header and instruction:
strategies/frame.py), with no content, at every step (agent-memory-bench's "protocol" arm; docs/controls.md).

Option `match`: the design whose frame it delivers (`full`, the default, or any design that declares one);
`frame: neutral` delivers that design's header under the common instruction. `protocol_only − none` is the
effect of being told that memory follows, in that design's words, with none to read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Optional

from strategies.base import Delivery, StepView, StrategyBase, TaskView, Trajectory
from strategies.frame import Frame, chosen
from strategies.controls import check_match
from strategies.registry import StrategyContext, strategy_class

CONTROL = "protocol_only"  # the row's `control_arm` (`protocol_only:<match>`): analysis/views/controls.py reads it


@dataclass
class ProtocolOnly(StrategyBase):
    name: str = "protocol_only"
    uses_memory = False  # the frame is the same whatever memory= names: no provenance label, as `none`
    known_options = ("match", "frame")
    match: str = "full"
    delivery: Delivery = Delivery((), "")

    def deliver(self, task: TaskView, step: StepView) -> Delivery:
        return self.delivery

    def record_facts(self, trajectory: Optional[Trajectory]) -> Mapping[str, Any]:
        return {"control_arm": f"{CONTROL}:{self.match}"}

    @classmethod
    def validate_options(cls, options: dict[str, Any]) -> None:
        cls.delivered_frame(options)

    @classmethod
    def delivered_frame(cls, options: dict[str, Any]) -> Frame:
        declared = strategy_class(check_match(CONTROL, options)).frame
        assert isinstance(declared, Frame)  # check_match: a design that declares its frame
        return chosen(declared, options, CONTROL)

    @classmethod
    def create(cls, ctx: StrategyContext) -> "ProtocolOnly":
        frame, match = cls.delivered_frame(ctx.options), check_match(CONTROL, ctx.options)
        return cls(options=dict(ctx.options), match=match, delivery=Delivery((), frame.wrap()))
