"""`awm_online`: Agent Workflow Memory, online (Wang et al. 2024, arXiv 2409.07429; zorazrw/agent-workflow-memory
webarena/pipeline.py, autoeval/, induce_prompt.py).

Each trial stream starts with no workflows. After each of its episodes the model judges the episode from the
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

from strategies.awm import FRAME, INSTRUCTION, induction_prompt, parse_workflows, render_workflows
from strategies.base import (Delivery, Gold, Guideline, Rerun, StepView, StrategyBase, StreamState, TaskView,
                             Trajectory, learner_start)
from strategies.stream_data import guideline_data, guidelines_of, other_stream
from strategies.budget import fit_budget, token_counter
from strategies.declaration import Declaration, always
from strategies.experiences import condense
from strategies.options import BlockOptions, option
from strategies.plan_block import Count, PlanEstimate
from strategies.reasoning_bank_prompts import JUDGE_SYSTEM, parse_status, user_turn
from strategies.reasoning_bank import JUDGE_TEMPERATURE
from strategies.registry import StrategyContext
from strategies.role_llm import RoleLLM

ONLINE_TEMPERATURE, ONLINE_MAX_TOKENS = 1.0, 2048  # webarena/induce_prompt.py llm_generate


@dataclass(frozen=True)
class AwmOnlineOptions(BlockOptions):
    model: Optional[str] = option(None, means="a model string or null")  # judge and inducer; null: the run's model

    def __post_init__(self) -> None:
        if self.model == "":
            raise ValueError("option model must be a model string or null, got ''")


def induced_online(memory: Optional[str], count: Count, opts: Any) -> PlanEstimate:
    return PlanEstimate(0.0, "no workflows at first (they are induced online; its judge and induction calls are "
                        "not in this estimate)", {"awm_judge": 1.0, "awm_induction": 1.0})


@dataclass
class AwmOnline(StrategyBase):
    name: str = "awm_online"
    # awm's frame; starts from no workflows and learns online: memory= is not read
    declaration = Declaration(options=AwmOnlineOptions, frame=FRAME, uses_memory=False, online=always,
                              trial_streams=True, plan=induced_online)
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
        return fit_budget(self.workflows, [0] * len(self.workflows),
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
                                       for i, w in enumerate(found, start=1))
                self._delivery = self._fit()
            return {"awm_judged_success": success, "awm_workflows": len(self.workflows)}

    def record_facts(self, trajectory: Optional[Trajectory]) -> Mapping[str, Any]:
        return learner_start(False)  # every stream from no workflows: it reads no artifact

    @property
    def state(self) -> "StreamState":
        return self  # its streams as data: snapshot / restore

    def snapshot(self, trial: int) -> dict[str, Any]:
        stream = self.for_trial(trial)
        with stream._lock:
            return {"solved": [list(pair) for pair in stream._solved], "workflows": guideline_data(stream.workflows)}

    def restore(self, trial: int, state: Mapping[str, Any]) -> None:
        stream = self.for_trial(trial)
        with stream._lock:
            stream._solved = [(str(task_id), str(line)) for task_id, line in state["solved"]]
            stream.workflows = tuple(guidelines_of(state["workflows"]))
            stream._delivery = stream._fit()

    def for_trial(self, trial: int) -> "AwmOnline":
        if trial == 0:
            return self
        with self._lock:  # each trial its own stream from no workflows
            if trial not in self._streams:
                self._streams[trial] = AwmOnline(options=dict(self.options), llm=self.llm,
                                                 count_tokens=self.count_tokens, stream_trial=trial)
            return self._streams[trial]

    @classmethod
    def create(cls, ctx: StrategyContext) -> "AwmOnline":
        model = cls.declaration.parse(cls.name, ctx.options).model
        return cls(options=dict(ctx.options), count_tokens=token_counter(ctx.model),
                   llm=RoleLLM.role(ctx.run_client(), model))
