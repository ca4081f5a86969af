"""`dynamic_cheatsheet`: Dynamic Cheatsheet (Suzgun et al. 2025, arXiv 2504.07952; suzgunmirac/dynamic-cheatsheet:
dynamic_cheatsheet/language_model.py, prompts/curator_prompt_for_dc_cumulative.txt, utils/extractor.py), the
cumulative variant by default; `variant: retrieval_synthesis` is the other (retrieval_synthesis.py).

One cheatsheet, starting as "(empty)", is in the agent's prompt at every step; after each finished episode a
curator (the run's model, temperature 0, max_tokens 2 x 2048 as the reference's curator call) reads the task, what
the agent did and the current cheatsheet, judges the solution's correctness itself (no ground truth), and rewrites
the whole cheatsheet between `<cheatsheet>` tags; an answer without the tags keeps the old one (the reference's
extract_cheatsheet). Each trial is its own stream from "(empty)" (as ace_online), or, handed the train artifact of
`make cheatsheet` (harness/memory/cheatsheet.py) as `memory_by_strategy.dynamic_cheatsheet`, from the cheatsheet
(and for retrieval_synthesis the past episodes) the variant's stream reached over the train episodes. It learns at
test time from the agent's own episodes, without labels, as the reference does.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Mapping, Optional

from memory_kit.extraction import query_of, render_trajectory
from memory_kit.role_llm import RoleLLM
from memory_kit.stream_data import other_stream
from strategies.base import Gold, Rerun, Trajectory
from strategies.dynamic_cheatsheet.artifact import load_start_state
from strategies.dynamic_cheatsheet.cheatsheet import (VARIANTS, Cheatsheet, delivered, empty_cheatsheet,
                                                      extract_cheatsheet)
from strategies.dynamic_cheatsheet.retrieval_synthesis import RetrievalSynthesisCheatsheet
from strategies.plan_block import Count, PlanEstimate
from strategies.registry import StrategyContext

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


def starts_from_train_cheatsheet(path: Optional[str]) -> None:
    load_start_state(path, VARIANTS[0])


def cheatsheet_at_start(memory: Optional[str], count: Count, opts: Any) -> PlanEstimate:
    start = load_start_state(memory, opts.variant)
    if start is None:
        return empty_cheatsheet(memory, count, opts)
    return PlanEstimate(float(count(delivered(start["cheatsheet"]).text)), "the train cheatsheet it starts from "
                        "(it grows online; its curator calls are not in this estimate)", {"dc_curator": 1.0})


@dataclass
class DynamicCheatsheet(Cheatsheet):
    declaration = replace(Cheatsheet.declaration, plan=cheatsheet_at_start, check_memory=starts_from_train_cheatsheet)

    def learn(self, trajectory: Trajectory, rerun: Optional[Rerun] = None, gold: Optional[Gold] = None,
              samples: Optional[int] = None) -> Mapping[str, Any]:
        if trial := other_stream(self.stream_trial, trajectory):  # the episode's own stream learns it
            return self.for_trial(trial).learn(trajectory, rerun, gold, samples)
        with self._lock:
            old = self.cheatsheet
        new = extract_cheatsheet(self.curator().ask(CURATOR_SYSTEM, curator_turn(trajectory, old), "dc_curator"), old)
        with self._lock:
            self.cheatsheet = new
        return {"dc_cheatsheet_kept": new == old}

    @classmethod
    def create(cls, ctx: StrategyContext) -> Cheatsheet:
        opts = cls.declaration.parse(cls.name, ctx.options)
        llm = RoleLLM.role(ctx.run_client(), opts.model)
        made = RetrievalSynthesisCheatsheet if opts.variant == "retrieval_synthesis" else cls
        return made(options=dict(ctx.options), llm=llm, start=load_start_state(ctx.memory_path, opts.variant)).started()
