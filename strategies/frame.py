"""A design's frame: the tag, header and instruction its memory block is wrapped in, declared as data on its
class (its declaration's `frame`), so the control arms can wrap their text the same way (docs/controls.md).

`placebo` and `protocol_only` read the frame of the design they match (`match=<design>`) through the registry;
the option `frame: neutral`, taken by every framed design and by both arms, swaps the design's instruction for
one common instruction (NEUTRAL_INSTRUCTION), so designs compared head to head differ in content alone.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Sequence

FRAMES = ("own", "neutral")  # the `frame` option: the design's own instruction, or the common one
# the common instruction: says what the block is for and nothing of how to use it (no design's wording)
NEUTRAL_INSTRUCTION = "Notes from earlier tasks; use them as you see fit."


@dataclass(frozen=True)
class Frame:
    tag: str  # the block's tag: <tag> ... </tag>
    header: str  # what the block holds ("" : none, as dynamic_cheatsheet's bare tags)
    instruction: str  # how the agent is told to use it ("" : none)
    one_line: bool = False  # header and instruction on one line (`full`: "Learned guidelines from ... apply):")

    def head(self) -> list[str]:
        """The lines after the opening tag, before the content."""
        if self.one_line:
            return [f"{self.header} {self.instruction}".strip()]
        return [line for line in (self.header, self.instruction) if line]

    def wrap(self, lines: Sequence[str] = ()) -> str:
        """The block: tag, header, instruction, `lines`, closing tag (with no line: what protocol_only delivers)."""
        return "\n".join([f"<{self.tag}>", *self.head(), *lines, f"</{self.tag}>"])

    def neutral(self) -> "Frame":
        """The same tag and header under the common instruction."""
        return replace(self, instruction=NEUTRAL_INSTRUCTION, one_line=False)


def chosen(frame: Frame, choice: str) -> Frame:
    """The frame a design delivers under its `frame` option: its own, or under `neutral` the common instruction."""
    return frame.neutral() if choice == "neutral" else frame
