"""`awm_online`: Agent Workflow Memory, online (Wang et al. 2024, arXiv 2409.07429; zorazrw/agent-workflow-memory
webarena/pipeline.py, autoeval/, induce_prompt.py).

Each trial stream starts with no workflows, as the reference's online run does, or, handed the offline awm's
train workflows (`make awm`) as `memory_by_strategy.awm_online`, with those: they stay, and the stream's induced
workflows are delivered after them. After each of its episodes the model judges the episode from the
trajectory alone (the reference's `--criteria autoeval` default: no ground truth); then, after EVERY task as the
reference's pipeline.py runs induce_prompt.py after each one (once the stream has a judged success), the
workflows are induced again from every episode of the stream judged successful so far and replace the old ones
(the reference rewrites the workflow file), with the offline variant's instruction and one-shot example at the
reference online induction's temperature 1.0 and max_tokens 2048. Every workflow is delivered at every step.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional

from memory_kit.budget import fit_budget, token_counter
from memory_kit.experiences import condense
from memory_kit.judge import JUDGE_SYSTEM, JUDGE_TEMPERATURE, parse_status, user_turn
from memory_kit.start_artifact import load_start
from memory_kit.stream_data import TrialStreams, guideline_data, guidelines_of, other_stream
from strategies.awm.strategy import FRAME, INSTRUCTION, KIND, induction_prompt, parse_workflows, render_workflows
from strategies.base import (Delivery, Gold, Guideline, Rerun, StepView, StrategyBase, TaskView,
                             Trajectory, learner_start)
from strategies.declaration import Declaration, always
from strategies.options import BlockOptions, option
from strategies.plan_block import Count, PlanEstimate
from memory_kit.role_llm import RoleLLM
from strategies.registry import StrategyContext

ONLINE_TEMPERATURE, ONLINE_MAX_TOKENS = 1.0, 2048  # webarena/induce_prompt.py llm_generate


@dataclass(frozen=True)
class AwmOnlineOptions(BlockOptions):
    model: Optional[str] = option(None, means="a model string or null")  # judge and inducer; null: the run's model

    def __post_init__(self) -> None:
        if self.model == "":
            raise ValueError("option model must be a model string or null, got ''")


def starts_from_workflows(path: Optional[str]) -> None:
    load_start(path, KIND, "awm_online", "make awm")


def induced_online(memory: Optional[str], count: Count, opts: Any) -> PlanEstimate:
    start, _ = load_start(memory, KIND, "awm_online", "make awm")
    if start:
        return PlanEstimate(float(count(render_workflows(start))), "the train workflows it starts from (it grows "
                            "online; its judge and induction calls are not in this estimate)",
                            {"awm_judge": 1.0, "awm_induction": 1.0})
    return PlanEstimate(0.0, "no workflows at first (they are induced online; its judge and induction calls are "
                        "not in this estimate)", {"awm_judge": 1.0, "awm_induction": 1.0})


@dataclass
class AwmOnline(TrialStreams, StrategyBase):
    name: str = "awm_online"
    # awm's frame; learns online; memory= is not read: no workflows unless memory_by_strategy.awm_online names them
    declaration = Declaration(options=AwmOnlineOptions, frame=FRAME, memory_entry_only=True, online=always,
                              trial_streams=True, plan=induced_online, check_memory=starts_from_workflows)
    start: tuple[Guideline, ...] = ()  # the train workflows it starts from (none: the reference's empty start)
    llm: Optional[RoleLLM] = None
    count_tokens: Optional[Callable[[str], int]] = field(default=None, repr=False)
    stream_trial: int = 0  # the trial whose stream this is (0: the job's strategy, which holds the others)
    _lock: threading.Lock = field(init=False, repr=False, default_factory=threading.Lock)
    _streams: dict[int, "AwmOnline"] = field(init=False, repr=False, default_factory=dict)

    def __post_init__(self) -> None:
        self.opts = self.typed_options()
        self.count_tokens = self.count_tokens or token_counter(None)
        self._solved: list[tuple[str, str]] = []  # (task id, condensed episode) judged successful, in stream order
        self.workflows: tuple[Guideline, ...] = ()
        self._delivery = self._fit()

    def _fit(self) -> Delivery:
        assert self.count_tokens is not None
        frame = self.declaration.delivered_frame(self.opts) or FRAME
        shown = (*self.start, *self.workflows)
        return fit_budget(shown, [0] * len(shown),
                          lambda kept, note: render_workflows(kept, note, frame), self.count_tokens,
                          self.opts.budget_tokens, noun="workflows")

    def deliver(self, task: TaskView, step: StepView) -> Delivery:
        with self._lock:
            return self._delivery

    def learn(self, trajectory: Trajectory, rerun: Optional[Rerun] = None, gold: Optional[Gold] = None,
              samples: Optional[int] = None) -> Mapping[str, Any]:
        if trial := other_stream(self.stream_trial, trajectory):  # the episode's own stream learns it
            return self.for_trial(trial).learn(trajectory, rerun, gold, samples)
        assert self.llm is not None, "awm_online learns only when built with a model (create)"
        judge = self.llm.with_kwargs(temperature=JUDGE_TEMPERATURE)  # the reference's autoeval clients: temperature 0
        success = bool(parse_status(judge.ask(JUDGE_SYSTEM, user_turn(trajectory), "awm_judge")))
        with self._lock:
            solved = [*self._solved, (trajectory.task.task_id, condense(trajectory))] if success else self._solved
        if not solved:  # no judged success yet: nothing to induce from
            return {"awm_judged_success": success, "awm_workflows": len(self.workflows)}
        inducer = self.llm.with_kwargs(temperature=ONLINE_TEMPERATURE, max_tokens=ONLINE_MAX_TOKENS)
        found = parse_workflows(inducer.ask(INSTRUCTION, induction_prompt([line for _, line in solved]),
                                            "awm_induction"))
        sources = tuple(dict.fromkeys(task_id for task_id, _ in solved))
        with self._lock:
            self._solved = solved
            if found:  # an answer with no workflow keeps the ones there are
                self.workflows = tuple(Guideline(id=f"awm-{i}", text=w, support=len(sources), source_task_ids=sources)
                                       for i, w in enumerate(found, start=len(self.start) + 1))
                self._delivery = self._fit()
            return {"awm_judged_success": success, "awm_workflows": len(self.workflows)}

    def record_facts(self, trajectory: Optional[Trajectory]) -> Mapping[str, Any]:
        return learner_start(bool(self.start))

    def new_stream(self) -> "AwmOnline":
        return AwmOnline(options=dict(self.options), start=self.start, llm=self.llm, count_tokens=self.count_tokens)

    def state_data(self) -> dict[str, Any]:
        return {"solved": [list(pair) for pair in self._solved], "workflows": guideline_data(self.workflows)}

    def set_state_data(self, state: Mapping[str, Any]) -> None:
        self._solved = [(str(task_id), str(line)) for task_id, line in state["solved"]]
        self.workflows = tuple(guidelines_of(state["workflows"]))
        self._delivery = self._fit()

    @classmethod
    def create(cls, ctx: StrategyContext) -> "AwmOnline":
        model = cls.declaration.parse(cls.name, ctx.options).model
        start, _ = load_start(ctx.memory_path, KIND, cls.name, "make awm")
        return cls(options=dict(ctx.options), start=tuple(start), count_tokens=token_counter(ctx.model),
                   llm=RoleLLM.role(ctx.run_client(), model))
