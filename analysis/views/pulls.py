"""How often the agent pulled memory offered as a tool (docs/memory-tools.md): `on_demand`, and any strategy whose
rows carry `memory_tool_calls` (written only when the strategy offered a memory tool).

A pulled strategy's success says nothing about its memory unless the agent called the tool: a model that never
calls `recall_guidelines` runs as `none` does, and "pulled memory does not help" would be misread. So beside its
success every such row gets its pull rate: the share of episodes with at least one memory call, the calls per
episode and the guidelines the calls returned per episode (`memory_tool_ids`: per call, the ids its answer gave);
a rate of 0 says in words that the memory was never pulled. `make table`, `make tables`, the controls view and
the viewer read these same figures.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from analysis import fmt
from analysis.statistics.metrics import EXCLUDED, GROUP, key_of, valid

CALLS, IDS = "memory_tool_calls", "memory_tool_ids"  # harness/row.py


@dataclass(frozen=True)
class PullRate:
    episodes: int
    pulled: int  # episodes with at least one memory call
    calls: int
    returned: int  # guideline ids the calls' answers gave, summed
    success: float

    @property
    def share(self) -> float:
        return self.pulled / self.episodes if self.episodes else float("nan")

    def figures(self) -> str:
        """'pull rate 81.2% (130 of 160 episodes), 0.81 calls and 2.4 guidelines returned per episode'."""
        n = max(self.episodes, 1)
        return (f"pull rate {fmt.pct(self.share)} ({self.pulled} of {self.episodes} episodes), {self.calls / n:.2f} "
                f"calls and {self.returned / n:.1f} guidelines returned per episode")

    def line(self, strategy: str) -> str:
        if self.pulled == 0:
            return (f"{strategy}: success {fmt.pct(self.success)}; pull rate {fmt.pct(0.0)} (0 of {self.episodes} "
                    f"episodes called a memory tool): the memory was never pulled")
        return f"{strategy}: success {fmt.pct(self.success)}; {self.figures()}"


def _returned(ids: object) -> int:
    """Guideline ids over one episode's calls (`[[id, ...], ...]`); 0 for a row without them."""
    if not isinstance(ids, (list, tuple)):
        return 0
    return sum(len(call) if isinstance(call, (list, tuple)) else 0 for call in ids)


def pull_rate(frame: pd.DataFrame) -> PullRate:
    """One strategy's valid records -> its pull rate (an episode without the column made no call)."""
    calls = pd.to_numeric(frame[CALLS], errors="coerce").fillna(0) if CALLS in frame else pd.Series(0, frame.index)
    returned = frame[IDS].map(_returned) if IDS in frame else pd.Series(0, frame.index)
    return PullRate(len(frame), int((calls > 0).sum()), int(calls.sum()), int(returned.sum()),
                    float(frame["success"].astype(bool).mean()) if len(frame) else float("nan"))


def pull_rates(records: pd.DataFrame, exclude: tuple[str, ...] = EXCLUDED) -> dict[tuple, PullRate]:
    """GROUP key (as key_of gives it) -> pull rate, for every strategy that offered a memory tool."""
    if CALLS not in records or records[CALLS].isna().all():
        return {}
    ok = valid(records, exclude)
    offered = set(ok.loc[ok[CALLS].notna(), "strategy"].astype(str))
    return {key_of(key): pull_rate(group) for key, group in ok.groupby(GROUP, sort=False, dropna=False)
            if str(group["strategy"].iloc[0]) in offered}


def terminal(records: pd.DataFrame, exclude: tuple[str, ...] = EXCLUDED) -> str:
    """A block under the strategies table: one line per strategy that offered a memory tool ('' when none did)."""
    rates = pull_rates(records, exclude)
    if not rates:
        return ""
    cells = len({key[:-1] for key in rates})
    lines = [("/".join(v for v in key[:-1] if v) + ": " if cells > 1 else "") + rate.line(key[-1])
             for key, rate in rates.items()]
    return fmt.wrap("Memory pulled as a tool (docs/memory-tools.md): the share of episodes with at least one memory "
                    "call, calls and guidelines returned per episode", "") + "\n" + \
        "\n".join(fmt.wrap(f"  {line}", "    ") for line in lines)
