"""Two episodes of the same task and trial, aligned by agent step, with the first step where they part.

Steps are aligned by their index (the n-th model call of each agent). Two steps agree when the agent did the
same thing: the same tool calls (names and arguments) and the same text, the simulated world's
`[simulated: …]` tag left out (it reports the draw, not something the agent chose). The first divergence is the
first step where they do not agree, or where one episode has a step and the other has ended.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from analysis.viewer.memory import Step
from analysis.viewer.trajectory import Turn

_SIM_TAG = re.compile(r"\s*\[simulated: [^\]]*\]")


@dataclass
class Row:
    index: int
    a: Turn | None
    b: Turn | None
    a_memory: Step | None
    b_memory: Step | None
    same: bool
    only_a: list[str] = field(default_factory=list)  # guideline ids delivered in A's step and not B's
    only_b: list[str] = field(default_factory=list)


def action(turn: Turn | None) -> tuple | None:
    """What the agent did at a step, as something comparable; None when there is no such step."""
    if turn is None:
        return None
    calls = tuple((c.get("name"), c.get("arguments")) for c in turn.tool_calls)
    return _SIM_TAG.sub("", turn.text).strip(), calls


def align(a_turns: dict[int, Turn], b_turns: dict[int, Turn], a_steps: list[Step],
          b_steps: list[Step]) -> list[Row]:
    """One row per step index either episode reached (turns from the conversations, memory from the ledgers)."""
    count = max([len(a_steps), len(b_steps), *(i + 1 for i in a_turns), *(i + 1 for i in b_turns)])
    rows = []
    for i in range(count):
        am = a_steps[i] if i < len(a_steps) else None
        bm = b_steps[i] if i < len(b_steps) else None
        a_ids = am.delivered if am else []
        b_ids = bm.delivered if bm else []
        ta, tb = a_turns.get(i), b_turns.get(i)
        rows.append(Row(i, ta, tb, am, bm, same=action(ta) == action(tb),
                        only_a=[x for x in a_ids if x not in set(b_ids)],
                        only_b=[x for x in b_ids if x not in set(a_ids)]))
    return rows


def first_divergence(rows: list[Row]) -> int | None:
    return next((r.index for r in rows if not r.same), None)


def delivered_difference(a_steps: list[Step], b_steps: list[Step]) -> tuple[list[str], list[str]]:
    """Guideline ids delivered at some step of A and at no step of B, and the other way round (in order)."""
    a_all = list(dict.fromkeys(x for s in a_steps for x in s.delivered))
    b_all = list(dict.fromkeys(x for s in b_steps for x in s.delivered))
    return [x for x in a_all if x not in set(b_all)], [x for x in b_all if x not in set(a_all)]
