"""`reasoning_bank`: ReasoningBank (Ouyang et al. 2025, arXiv 2509.25140; google-research/google-research,
ReasoningBank/WebArena: run.py, memory_management.py, induce_memory.py, prompt/instruction.py).

Memory items {title, description, content} are distilled from successful **and** failed trajectories, at most 3
per trajectory (strategies/reasoning_bank/prompts.py). Whether a trajectory succeeded is the model's own
judgement (an LLM judge on the same backbone, the reference's autoeval criterion): no ground truth by default;
`judge: ground_truth` uses the benchmark's label instead (train only, refused elsewhere). Retrieval: the top_k
(reference n=1) past tasks whose query is most similar (embeddings) to the task at hand; all their items are
delivered. Online (default): after each episode the judge and the extractor run and the items are appended, no
consolidation; each trial is its own stream from the same starting bank (as ace_online). The starting bank is
the job's artifact (`make reasoning-bank`: the same distillation over a `none` run on train), or empty without
one (memory=null: the paper's test-time setting).

The query is what the agent has seen (task statement, else the user's first message): on τ² the first step,
before the user speaks, gets nothing. The judge and the extractor are the run's model unless `model` is set; a
scripted or simulated run model is answered by the SCRIPTED designs model (memory_kit/role_llm.py).
"""

from __future__ import annotations

import itertools
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional, Sequence

import numpy as np

from memory_kit.extraction import query_of
from memory_kit.judge import JUDGE_SYSTEM, JUDGE_TEMPERATURE, parse_status, user_turn
from strategies.base import (Delivery, Embedder, Gold, Guideline, Rerun, StepView, StrategyBase, StreamState,
                             TaskView, Trajectory, learner_start, seen_task_text)
from memory_kit.budget import fit_budget, token_counter
from strategies.declaration import Declaration
from strategies.frame import Frame
from strategies.options import BlockOptions, option
from strategies.plan_block import NO_ARTIFACT, Count, PlanEstimate, artifact_items, median_window
from strategies.reasoning_bank.prompts import FAILURE_SYSTEM, MAX_ITEMS, SUCCESS_SYSTEM, parse_items
from strategies.registry import StrategyContext
from memory_kit.role_llm import RoleLLM
from memory_kit.stream_data import TrialStreams, guideline_data, guidelines_of, other_stream
from memory_kit.vector_search import rank_rows, stable_similarity

KIND = "reasoning_bank"
JUDGES = ("self", "ground_truth")
HEADER = "Memory items from similar past tasks (title: description, then the insight):"
# the agent's instruction (WebArena/agents/legacy/agent.py appends it to the system message with the items): the
# items may help, use one when relevant, and at each step first say whether it uses each item, then act
INSTRUCTION = ("These memory items were gathered from earlier interactions and may help with this task; use one "
               "when you judge it relevant. At each step, first state explicitly whether you will use each memory "
               "item or not, then act.")
FRAME = Frame("reasoning_bank", HEADER, INSTRUCTION)


@dataclass(frozen=True)
class BankOptions(BlockOptions):
    # past tasks retrieved (0: the dose axis' no-memory point)
    top_k: int = option(1, min=0, source="ReasoningBank run.py / memory_management.select_memory: n=1")
    # LLM self-judgement (its default) | ground_truth
    judge: str = option("self", choices=JUDGES, source="induce_memory.py --criteria autoeval")
    learn_online: bool = option(True, source="run.py: after each task")  # append every finished episode's items
    max_items: int = option(MAX_ITEMS, min=1, source="prompt/instruction.py: at most 3")  # per trajectory
    temperature: float = option(1.0, source="induce_memory.py llm_generate: temperature=1.0")  # extraction
    # the extractor's own output limit, never the run's (a local run's 256 would cut an item short); the reference's
    # llm_generate allows 65536 (gemini-2.5-flash's output limit), above what other providers accept
    max_tokens: int = option(8192, min=1)
    model: Optional[str] = None  # judge and extractor; null: the run's model
    embedder: str = "minilm"  # the reference embeds with gemini-embedding-001; ours offline by default
    embed_cache: Optional[str] = ".cache/embeddings"


def top_k_tasks(memory: Optional[str], count: Count, opts: Any) -> PlanEstimate:
    """The top_k median-sized past tasks' items of the starting bank."""
    items = artifact_items(memory)
    if items is None:
        return NO_ARTIFACT
    groups: dict[str, list[Guideline]] = {}
    for g in items:
        groups.setdefault(g.id.rsplit("-", 1)[0], []).append(g)
    picked = [g for task in median_window(list(groups.values()), opts.top_k, lambda t: sum(len(g.text) for g in t))
              for g in task]
    return PlanEstimate(float(count(render_bank(picked))), f"top_k {opts.top_k} past tasks' items; it grows online "
                        "(its judge and extractor calls per episode are not in this estimate)",
                        {"rb_judge": 1.0, "rb_extractor": 1.0})


def check_bank(path: Optional[str]) -> None:
    load_bank(path)


def distil(trajectory: Trajectory, key: str, llm: RoleLLM, opts: BankOptions) -> tuple[bool, list[Guideline]]:
    """(judged success, the trajectory's memory items): judge (or the label), then the matching extraction."""
    turn = user_turn(trajectory)
    if opts.judge == "ground_truth":
        success = bool(trajectory.success)
    else:  # no verdict counts as a failure: its lessons are then framed as what to avoid
        judge = llm.with_kwargs(temperature=JUDGE_TEMPERATURE)  # the reference's autoeval clients: temperature 0
        success = bool(parse_status(judge.ask(JUDGE_SYSTEM, turn, "rb_judge")))
    extractor = llm.with_kwargs(temperature=opts.temperature, max_tokens=opts.max_tokens)
    answer = extractor.ask(SUCCESS_SYSTEM if success else FAILURE_SYSTEM, turn, "rb_extractor")
    query = query_of(trajectory)
    items = [Guideline(id=f"rb-{key}-{i}", text=f"{title}: {description} {content}",
                       category="strategy" if success else "recovery", source_task_ids=(trajectory.task.task_id,),
                       source_task_text=query or title, rationale="success" if success else "failure")
             for i, (title, description, content) in enumerate(parse_items(answer, opts.max_items), start=1)]
    return success, items


def render_bank(items: Sequence[Guideline], note: str = "", frame: Frame = FRAME) -> str:
    if not items and not note:
        return ""
    return frame.wrap([f"- [{g.id}] {g.text}" for g in items] + ([note] if note else []))


@dataclass
class ReasoningBank(TrialStreams, StrategyBase):
    name: str = "reasoning_bank"
    declaration = Declaration(options=BankOptions, online=lambda opts: opts.learn_online, trial_streams=True,
                              ground_truth=lambda opts: opts.judge == "ground_truth", frame=FRAME, plan=top_k_tasks,
                              check_memory=check_bank)
    items: tuple[Guideline, ...] = ()
    embedder: Optional[Embedder] = None
    llm: Optional[RoleLLM] = None
    count_tokens: Optional[Callable[[str], int]] = field(default=None, repr=False)
    stream_trial: int = 0  # the trial whose stream this is (0: the job's strategy, which holds the others)
    _lock: threading.Lock = field(init=False, repr=False, default_factory=threading.Lock)
    _streams: dict[int, "ReasoningBank"] = field(init=False, repr=False, default_factory=dict)

    def __post_init__(self) -> None:
        self.opts = self.typed_options()
        self.learns_online = self.opts.learn_online
        if self.embedder is None:
            from memory_kit.embeddings import make_embedder

            self.embedder = make_embedder(self.opts.embedder, cache_dir=self.opts.embed_cache)
        self.count_tokens = self.count_tokens or token_counter(None)
        self._bank: list[Guideline] = list(self.items)
        self._groups: dict[str, list[Guideline]] = {}  # one entry per past task (episode): its items
        self._queries: list[str] = []
        self._vectors = np.zeros((0, 1), dtype=np.float32)
        self._add(self._bank)

    def _add(self, items: Sequence[Guideline]) -> None:
        new: list[str] = []
        for g in items:
            group = g.id.rsplit("-", 1)[0]
            if group not in self._groups:
                self._groups[group] = []
                new.append(group)
            self._groups[group].append(g)
        if new:
            assert self.embedder is not None
            vecs = np.asarray(self.embedder.embed([self._groups[k][0].source_task_text for k in new]), np.float32)
            self._vectors = vecs if not self._queries else np.vstack([self._vectors, vecs])
            self._queries += new

    def retrieve(self, query: str) -> list[Guideline]:
        """Every item of the top_k past tasks most similar to `query` (ties: the earlier task)."""
        with self._lock:
            if not query or not self._queries or self.opts.top_k == 0:
                return []
            assert self.embedder is not None
            sims = stable_similarity(self._vectors @ np.asarray(self.embedder.embed([query])[0], np.float32))
            order = rank_rows(sims, np.arange(len(self._queries)))[: self.opts.top_k]
            return [g for i in order for g in self._groups[self._queries[int(i)]]]

    def deliver(self, task: TaskView, step: StepView) -> Delivery:
        picked = self.retrieve(seen_task_text(task, step))
        assert self.count_tokens is not None
        frame = self.declaration.delivered_frame(self.opts) or FRAME
        return fit_budget(picked, [-i for i in range(len(picked))], lambda kept, note: render_bank(kept, note, frame),
                          self.count_tokens, self.opts.budget_tokens, noun="memory items")

    def learn(self, trajectory: Trajectory, rerun: Optional[Rerun] = None, gold: Optional[Gold] = None,
              samples: Optional[int] = None) -> Mapping[str, Any]:
        if not self.learns_online:
            return {}
        if trial := other_stream(self.stream_trial, trajectory):  # the episode's own stream learns it
            return self.for_trial(trial).learn(trajectory, rerun, gold, samples)
        assert self.llm is not None, "reasoning_bank learns online only when built with a model (create)"
        key = (trajectory.episode or trajectory.task.task_id).replace("#", "-t")
        success, items = distil(trajectory, key, self.llm, self.opts)
        with self._lock:
            self._bank += items
            self._add(items)
        return {"rb_judged_success": success, "rb_items_added": len(items)}

    @property
    def state(self) -> Optional[StreamState]:
        return super().state if self.learns_online else None  # its streams as data, when it learns online

    def state_data(self) -> dict[str, Any]:
        """The items a stream has learned (its starting bank is the job's artifact)."""
        return {"items": guideline_data(self._bank[len(self.items):])}

    def set_state_data(self, state: Mapping[str, Any]) -> None:
        learned = guidelines_of(state["items"])
        if self._bank[len(self.items):] == learned:
            return
        self._bank, self._groups, self._queries = list(self.items), {}, []
        self._vectors = np.zeros((0, 1), dtype=np.float32)
        self._add(self._bank)
        for _, group in itertools.groupby(learned, key=lambda g: g.id.rsplit("-", 1)[0]):  # one per episode
            items = list(group)
            self._bank += items
            self._add(items)

    def record_facts(self, trajectory: Optional[Trajectory]) -> Mapping[str, Any]:
        return learner_start(bool(self.items)) if self.learns_online else {}

    def for_trial(self, trial: int) -> "ReasoningBank":
        return super().for_trial(trial) if self.learns_online else self  # no learning: one bank for every trial

    def new_stream(self) -> "ReasoningBank":  # its own stream, from the same starting bank
        return ReasoningBank(options=dict(self.options), items=self.items, embedder=self.embedder, llm=self.llm,
                             count_tokens=self.count_tokens)

    @classmethod
    def create(cls, ctx: StrategyContext) -> "ReasoningBank":
        opts = cls.declaration.parse(cls.name, ctx.options)
        return cls(options=dict(ctx.options), items=tuple(load_bank(ctx.memory_path)),
                   llm=RoleLLM.role(ctx.run_client(), opts.model),
                   count_tokens=token_counter(ctx.model))


def load_bank(path: Optional[str]) -> list[Guideline]:
    """The starting bank: a reasoning_bank artifact, or none (memory=null); another kind is refused."""
    if not path:
        return []
    from memory_kit.memory_file import load_memory

    items, meta = load_memory(path)
    if meta.get("kind") != KIND:
        raise ValueError(f"strategy 'reasoning_bank' starts from a reasoning_bank artifact (_meta.kind {KIND!r}); "
                         f"{path} is {meta.get('kind')!r}: build one with `make reasoning-bank`, or run it with "
                         f"memory=null to start empty")
    return items
