"""`dynamic_cheatsheet`: Dynamic Cheatsheet, cumulative variant (Suzgun et al. 2025, arXiv 2504.07952;
suzgunmirac/dynamic-cheatsheet: dynamic_cheatsheet/language_model.py, prompts/curator_prompt_for_dc_cumulative.txt,
utils/extractor.py).

One cheatsheet, starting as "(empty)", is in the agent's prompt at every step; after each finished episode a
curator (the run's model, temperature 0, max_tokens 2 x 2048 as the reference's curator call) reads the task, what
the agent did and the current cheatsheet, judges the solution's correctness itself (no ground truth), and rewrites
the whole cheatsheet between `<cheatsheet>` tags; an answer without the tags keeps the old one (the reference's
extract_cheatsheet). Each trial is its own stream from "(empty)" (as ace_online). It learns at test time from the
agent's own episodes, without labels, as the reference does; it reads no memory artifact. The
retrieval-synthesis variant is not built (docs/strategies.md).
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field, fields
from typing import Any, Mapping, Optional

from strategies.base import Delivery, Gold, Guideline, Rerun, StepView, StrategyBase, TaskView, Trajectory
from strategies.options import check_types
from strategies.reasoning_bank_prompts import query_of
from strategies.extraction import render_trajectory
from strategies.registry import StrategyContext
from strategies.role_llm import RoleLLM, role_model

EMPTY_CHEATSHEET = "(empty)"  # the reference's initial cheatsheet
_TAGGED = re.compile(r"<cheatsheet>(.*?)</cheatsheet>", re.S | re.I)

CURATOR_SYSTEM = """# CHEATSHEET CURATOR

You maintain a cheatsheet that evolves from task to task and helps a tool-using customer-service agent solve
future tasks. After each task you improve it: keep what is still correct and useful from the previous cheatsheet,
add the reusable strategies, checks and pitfalls this task shows, remove repetitions and trivia.

Before updating it, assess yourself whether the agent's handling of the task was correct: keep only what was
shown to work, and record errors as pitfalls to avoid. Keep entries concise, actionable and general (no user
names, ids or order numbers of this task). Give each entry a usage count and increase it when a strategy is used
again.

Write each entry as one line: `- [dc-<n>] <strategy or pitfall> (count: <k>)`.

Output the complete new cheatsheet between <cheatsheet> and </cheatsheet>; nothing of the old one survives
unless you copy it in.
"""


def curator_turn(trajectory: Trajectory, cheatsheet: str) -> str:
    return (f"## Task\n{query_of(trajectory)}\n\n## What the agent did\n{render_trajectory(trajectory)}\n\n"
            f"## Previous cheatsheet\n{cheatsheet}\n\n## Your new cheatsheet")


def extract_cheatsheet(answer: str, old: str) -> str:
    """The text between the last pair of <cheatsheet> tags; the old cheatsheet when there is none."""
    found = _TAGGED.findall(answer or "")
    return found[-1].strip() if found and found[-1].strip() else old


@dataclass(frozen=True)
class CheatsheetOptions:
    temperature: float = 0.0  # language_model.py advance_round: temperature=0.0
    max_tokens: int = 4096  # the curator's call: 2 x max_tokens (2048)
    model: str | None = None  # the curator; null: the run's model (a scripted run: the SCRIPTED designs model)

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> "CheatsheetOptions":
        unknown = set(options) - {f.name for f in fields(cls)}
        if unknown:
            raise ValueError(f"dynamic_cheatsheet: unknown option(s) {sorted(unknown)}")
        check_types("dynamic_cheatsheet", cls, dict(options))
        opts = cls(**options)
        if opts.max_tokens < 1:
            raise ValueError(f"dynamic_cheatsheet: max_tokens must be >= 1, got {opts.max_tokens}")
        return opts


@dataclass
class DynamicCheatsheet(StrategyBase):
    name: str = "dynamic_cheatsheet"
    known_options = tuple(f.name for f in fields(CheatsheetOptions))
    uses_memory = False  # starts from "(empty)" and learns online: memory= is not read
    trial_streams = True
    learns_online: bool = True
    llm: Optional[RoleLLM] = None
    cheatsheet: str = EMPTY_CHEATSHEET
    _lock: threading.Lock = field(init=False, repr=False, default_factory=threading.Lock)
    _streams: dict[int, "DynamicCheatsheet"] = field(init=False, repr=False, default_factory=dict)

    def __post_init__(self) -> None:
        self.opts = CheatsheetOptions.from_options(self.options)

    def deliver(self, task: TaskView, step: StepView) -> Delivery:
        with self._lock:
            text = self.cheatsheet
        return Delivery((Guideline(id="dc-cheatsheet", text=text),), f"<cheatsheet>\n{text}\n</cheatsheet>")

    def learn(self, trajectory: Trajectory, rerun: Optional[Rerun] = None, gold: Optional[Gold] = None,
              samples: Optional[int] = None) -> Mapping[str, Any]:
        assert self.llm is not None, "dynamic_cheatsheet learns only when built with a model (create)"
        with self._lock:
            old = self.cheatsheet
        curator = RoleLLM(self.llm.model, {**self.llm.kwargs, "temperature": self.opts.temperature,
                                           "max_tokens": self.opts.max_tokens}, self.llm.completion, self.llm.usage)
        new = extract_cheatsheet(curator.ask(CURATOR_SYSTEM, curator_turn(trajectory, old), "dc_curator"), old)
        with self._lock:
            self.cheatsheet = new
        return {"dc_cheatsheet_kept": new == old}

    def for_trial(self, trial: int) -> "DynamicCheatsheet":
        if trial == 0:
            return self
        with self._lock:
            if trial not in self._streams:
                self._streams[trial] = DynamicCheatsheet(options=dict(self.options), llm=self.llm)
            return self._streams[trial]

    @classmethod
    def validate_options(cls, options: dict[str, Any]) -> None:
        CheatsheetOptions.from_options(options)

    @classmethod
    def create(cls, ctx: StrategyContext) -> "DynamicCheatsheet":
        opts = CheatsheetOptions.from_options(ctx.options)
        return cls(options=dict(ctx.options),
                   llm=RoleLLM(role_model(opts.model, ctx.model), dict(ctx.model_kwargs) if not opts.model else {}))
