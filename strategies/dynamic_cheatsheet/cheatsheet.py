"""What both Dynamic Cheatsheet variants share (strategy.py and retrieval_synthesis.py beside this file): the
options, the reference's initial cheatsheet and tag extraction, and one delivered cheatsheet per trial stream."""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Self

from memory_kit.role_llm import RoleLLM
from memory_kit.stream_data import TrialStreams
from strategies.base import (Delivery, Guideline, StepView, StrategyBase, TaskView, Trajectory,
                             learner_start)
from strategies.declaration import Declaration, always
from strategies.frame import Frame
from strategies.options import frame_field, option
from strategies.plan_block import Count, PlanEstimate

EMPTY_CHEATSHEET = "(empty)"  # the reference's initial cheatsheet
VARIANTS = ("cumulative", "retrieval_synthesis")  # run_benchmark.py approach names DynamicCheatsheet_<Variant>
FRAME = Frame("cheatsheet", "", "")  # the reference's bare tags: no header, no instruction
_TAGGED = re.compile(r"<cheatsheet>(.*?)</cheatsheet>", re.S | re.I)


def extract_cheatsheet(answer: str, old: str) -> str:
    """The text between the FIRST pair of <cheatsheet> tags, as the reference's extractor takes it
    (suzgunmirac/dynamic-cheatsheet utils/extractor.py extract_cheatsheet: one regex search); the old cheatsheet
    when there is none (or it is empty)."""
    found = _TAGGED.search(answer or "")
    return found.group(1).strip() if found and found.group(1).strip() else old


@dataclass(frozen=True)
class CheatsheetOptions:
    temperature: float = option(0.0, source="dynamic_cheatsheet/language_model.py advance_round: temperature=0.0")
    max_tokens: int = option(4096, min=1, source="language_model.py: the curator's call, 2 x max_tokens (2048)")
    model: Optional[str] = None  # the curator; null: the run's model (a scripted run: the SCRIPTED designs model)
    variant: str = option("cumulative", choices=VARIANTS)
    # retrieval_synthesis only: the past episodes of the stream retrieved per task and their embedder (the
    # reference's inputs are embedded with OpenAI's; ours offline by default, as core_retrieval's)
    top_k: int = option(3, min=1, source="language_model.py: retrieve_top_k=3")
    embedder: str = "minilm"
    embed_cache: Optional[str] = ".cache/embeddings"
    frame: str = frame_field()


def empty_cheatsheet(memory: Optional[str], count: Count, opts: Any) -> PlanEstimate:
    return PlanEstimate(float(count(delivered(EMPTY_CHEATSHEET).text)), "the (empty) cheatsheet it starts from "
                        "(it grows online; its curator calls are not in this estimate)", {"dc_curator": 1.0})


@dataclass
class Cheatsheet(TrialStreams, StrategyBase):
    """One cheatsheet, delivered whole at every step; a variant says how it is rewritten (`learn`, `deliver`)."""

    name: str = "dynamic_cheatsheet"
    # learns online; memory= is not read: "(empty)" unless memory_by_strategy.dynamic_cheatsheet is given
    declaration = Declaration(options=CheatsheetOptions, memory_entry_only=True, online=always, trial_streams=True,
                              frame=FRAME, plan=empty_cheatsheet)
    llm: Optional[RoleLLM] = None
    cheatsheet: str = EMPTY_CHEATSHEET
    start: Optional[dict[str, Any]] = None  # the train artifact's state every stream starts from (None: "(empty)")
    stream_trial: int = 0  # the trial whose stream this is (0: the job's strategy, which holds the others)
    _lock: threading.Lock = field(init=False, repr=False, default_factory=threading.Lock)
    _streams: dict[int, "Cheatsheet"] = field(init=False, repr=False, default_factory=dict)

    def __post_init__(self) -> None:
        self.opts = self.typed_options()

    def deliver(self, task: TaskView, step: StepView) -> Delivery:
        with self._lock:
            text = self.cheatsheet
        return delivered(text, self.framed())

    def record_facts(self, trajectory: Optional[Trajectory]) -> Mapping[str, Any]:
        return learner_start(self.start is not None)

    def framed(self) -> Frame:
        return self.declaration.delivered_frame(self.opts) or FRAME

    def curator(self) -> RoleLLM:
        assert self.llm is not None, "dynamic_cheatsheet learns only when built with a model (create)"
        return self.llm.with_kwargs(temperature=self.opts.temperature, max_tokens=self.opts.max_tokens)

    def new_stream(self) -> Self:
        return type(self)(options=dict(self.options), llm=self.llm, start=self.start).started()

    def started(self) -> Self:
        """This stream at its start: the train artifact's state when it was given one."""
        if self.start is not None:
            with self._lock:
                self.set_state_data(self.start)
        return self

    def state_data(self) -> dict[str, Any]:
        """This stream as data (a variant adds what it keeps); called under the stream's lock."""
        return {"cheatsheet": self.cheatsheet}

    def set_state_data(self, state: Mapping[str, Any]) -> None:
        self.cheatsheet = str(state["cheatsheet"])


def delivered(text: str, frame: Frame = FRAME) -> Delivery:
    return Delivery((Guideline(id="dc-cheatsheet", text=text),), frame.wrap([text]))
