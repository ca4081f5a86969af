"""`awm`: Agent Workflow Memory, offline (Wang et al. 2024, arXiv 2409.07429; zorazrw/agent-workflow-memory,
mind2web/offline_induction.py and its prompt/instruction_action.txt, one_shot_action.txt).

Reusable workflows are induced once from the train split's *successful* episodes (the label decides which: train
only), one induction call per benchmark domain (the reference: per website), temperature 0, max_tokens 1024,
an instruction plus a one-shot example; the model's workflows are read after `# Summary Workflows`. The strategy
delivers every workflow as text at every step (the reference appends them to the system message). The workflows
artifact (`_meta.kind: workflows`) is written by `make awm` (harness/memory/workflows.py). The online variant is
`awm_online` (strategies/awm/online.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

from strategies.base import Delivery, Guideline, StepView, StrategyBase, TaskView
from memory_kit.budget import fit_budget, token_counter
from strategies.declaration import Declaration
from strategies.frame import Frame
from strategies.options import BlockOptions
from strategies.registry import StrategyContext

KIND = "workflows"
SUMMARY = "# Summary Workflows"
TEMPERATURE, MAX_TOKENS = 0.0, 1024  # offline_induction.py: temperature 0.0, max_tokens 1024

INSTRUCTION = """Given a list of customer-service tasks solved by a tool-using agent, extract the common workflows \
that solve them. Each task has its request and the agent's tool calls in order. Find the sub-sequences of actions \
that recur across several tasks and write each as a workflow: a commonly reused sub-routine. Do not write similar \
or overlapping workflows. Each workflow has at least two steps. Replace the values that change between tasks \
(names, ids, amounts) with descriptive variable names such as {user_id}; keep the tool names as they are. Cover as \
many of the tasks as you can. Write each workflow on one line: `Workflow <n>: <title>: <step> -> <step> -> ...`."""

ONE_SHOT = """## Concrete examples

Task: I want to return the headphones from my last order.
Actions: find_user_id_by_email({"email": "ana@x.com"}) -> get_user_details({"user_id": "ana_1"}) -> \
get_order_details({"order_id": "#W1"}) -> return_delivered_order_items({"order_id": "#W1", "item_ids": ["9"]})

Task: Please cancel my pending order, I ordered by mistake.
Actions: find_user_id_by_name_zip({"first_name": "Bo"}) -> get_user_details({"user_id": "bo_2"}) -> \
get_order_details({"order_id": "#W7"}) -> cancel_pending_order({"order_id": "#W7", "reason": "ordered by mistake"})

# Summary Workflows

Workflow 1: Identify the user and the order: find_user_id_by_email({email}) or find_user_id_by_name_zip({name}, \
{zip}) -> get_user_details({user_id}) -> get_order_details({order_id})
Workflow 2: Change an order after confirming it: get_order_details({order_id}) -> read the change back and get an \
explicit yes -> return_delivered_order_items({order_id}, {item_ids}) or cancel_pending_order({order_id}, {reason})
"""

FRAME = Frame("workflows", "Workflows that solved earlier tasks", "(reuse the one that fits):", one_line=True)
_WORKFLOW = re.compile(r"^\s*(?:[-*#]+\s*)?Workflow\s*\d+\s*[:.]\s*", re.M | re.I)


def parse_workflows(answer: str) -> list[str]:
    """The workflows written after `# Summary Workflows` (all of the answer when the heading is missing), each
    WHOLE: its `Workflow n:` line and every line after it up to the next workflow, on one line (the harness's
    memory bullet). The reference keeps the model's whole answer as its workflow text (mind2web/
    offline_induction.py), so a workflow written as a title and then its steps, one per line, keeps its steps."""
    text = answer.split(SUMMARY, 1)[-1] if SUMMARY in answer else answer
    heads = list(_WORKFLOW.finditer(text))
    bodies = [text[h.end():nxt.start() if nxt else len(text)] for h, nxt in zip(heads, [*heads[1:], None])]
    return list(dict.fromkeys(flat for body in bodies if (flat := " ".join(body.split()))))


def induction_prompt(lines: list[str]) -> str:
    """The one-shot example, then each episode's condensed line (memory_kit/experiences.py) as task and actions."""
    tasks = "\n\n".join(line.split(" | Last reply:")[0].replace(" | Actions:", "\nActions:") for line in lines)
    return f"{ONE_SHOT}\n## Tasks to summarise\n\n{tasks}\n\n{SUMMARY}\n"


def render_workflows(items: Sequence[Guideline], note: str = "", frame: Frame = FRAME) -> str:
    if not items and not note:
        return ""
    return frame.wrap([f"- [{g.id}] {g.text}" for g in items] + ([note] if note else []))


@dataclass
class AgentWorkflowMemory(StrategyBase):
    name: str = "awm"
    declaration = Declaration(options=BlockOptions, frame=FRAME, check_memory=lambda path: check_workflows(path))
    workflows: tuple[Guideline, ...] = ()
    count_tokens: Optional[Callable[[str], int]] = field(default=None, repr=False)

    def __post_init__(self) -> None:
        opts = self.typed_options()
        frame = self.declaration.delivered_frame(opts) or FRAME
        self._delivery = fit_budget(self.workflows, [0] * len(self.workflows),
                                    lambda kept, note: render_workflows(kept, note, frame),
                                    self.count_tokens or token_counter(None), opts.budget_tokens, noun="workflows")

    def deliver(self, task: TaskView, step: StepView) -> Delivery:
        return self._delivery

    @classmethod
    def create(cls, ctx: StrategyContext) -> "AgentWorkflowMemory":
        return cls(options=dict(ctx.options), workflows=tuple(load_workflows(ctx.memory_path)),
                   count_tokens=token_counter(ctx.model))


def load_workflows(path: Optional[str]) -> list[Guideline]:
    """The workflows artifact of `make awm`; none, or another kind, is refused."""
    from memory_kit.memory_file import load_memory

    if not path:
        raise ValueError("strategy 'awm' needs a workflows artifact: build one with `make awm`")
    items, meta = load_memory(path)
    if meta.get("kind") != KIND:
        raise ValueError(f"strategy 'awm' needs a workflows artifact (_meta.kind {KIND!r}); {path} is "
                         f"{meta.get('kind')!r}: build one with `make awm` (AWM= in make)")
    return items


def check_workflows(path: Optional[str]) -> None:
    load_workflows(path)
