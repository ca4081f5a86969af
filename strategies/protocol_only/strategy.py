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
from strategies.declaration import Declaration
from strategies.frame import Frame, chosen
from strategies.options import frame_field
from strategies.controls import check_match
from strategies.registry import StrategyContext, declaration

CONTROL = "protocol_only"  # the row's `control_arm` (`protocol_only:<match>`): analysis/views/controls.py reads it


@dataclass(frozen=True)
class ProtocolOnlyOptions:
    match: str = "full"  # the design whose frame it delivers: one that declares its frame
    frame: str = frame_field()

    def __post_init__(self) -> None:
        check_match(CONTROL, self.match)


def matched_frame(opts: ProtocolOnlyOptions) -> Frame:
    """The frame of the design it matches, as `frame` says (own or neutral)."""
    declared = declaration(opts.match).frame
    assert isinstance(declared, Frame)  # check_match: a design that declares its frame
    return chosen(declared, opts.frame)


@dataclass
class ProtocolOnly(StrategyBase):
    name: str = "protocol_only"
    # the frame is the same whatever memory= names: no provenance label, as `none`
    declaration = Declaration(options=ProtocolOnlyOptions, uses_memory=False, framed=matched_frame)
    match: str = "full"
    delivery: Delivery = Delivery((), "")

    def deliver(self, task: TaskView, step: StepView) -> Delivery:
        return self.delivery

    def record_facts(self, trajectory: Optional[Trajectory]) -> Mapping[str, Any]:
        return {"control_arm": f"{CONTROL}:{self.match}"}

    @classmethod
    def create(cls, ctx: StrategyContext) -> "ProtocolOnly":
        opts = cls.declaration.parse(cls.name, ctx.options)
        return cls(options=dict(ctx.options), match=opts.match, delivery=Delivery((), matched_frame(opts).wrap()))
