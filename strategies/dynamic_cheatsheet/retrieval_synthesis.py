"""Dynamic Cheatsheet's retrieval-synthesis variant (`dynamic_cheatsheet` with `variant: retrieval_synthesis`;
suzgunmirac/dynamic-cheatsheet language_model.py `DynamicCheatsheet_RetrievalSynthesis`,
prompts/curator_prompt_for_dc_retrieval_synthesis.txt).

Where the cumulative curator writes after a task, this one writes before it: once the agent knows its task, the
top_k (3) past episodes of the stream whose task is most similar (cosine of the embedded task texts) are shown to
the curator, most similar last, with the previous cheatsheet and the new task; its cheatsheet is delivered for the
rest of the episode and carried to the next task. An answer without <cheatsheet> tags falls back to the retrieved
episodes themselves, as the reference's does. A curator call that fails after its retries is that task's update
lost (its learn says `update_lost`): the last cheatsheet is delivered and the agent's episode stands. After an
episode the stream only keeps (task, what the agent did): no model call and no labels.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Self

import numpy as np

from strategies.base import Delivery, Embedder, Gold, Rerun, StepView, TaskView, Trajectory, seen_task_text
from strategies.dynamic_cheatsheet.cheatsheet import EMPTY_CHEATSHEET, Cheatsheet, delivered, extract_cheatsheet
from memory_kit.extraction import render_trajectory
from memory_kit.extraction import query_of
from memory_kit.role_client import RoleCallFailed
from memory_kit.stream_data import other_stream
from memory_kit.vector_search import rank_rows, stable_similarity

RS_CURATOR_SYSTEM = """# CHEATSHEET CURATOR (retrieval synthesis)

You maintain a cheatsheet that helps a tool-using customer-service agent solve its next task. Before each task you
see the previous cheatsheet, notes with the most similar earlier tasks and what the agent did on them, and the
next task. Write the cheatsheet that best helps with that next task: keep what is still correct and useful, add
the reusable strategies, checks and pitfalls the earlier tasks show, remove repetitions and trivia.

Judge the earlier solutions yourself: they may contain errors. Keep entries concise, actionable and general (no
user names, ids or order numbers). Give each entry a usage count and increase it when a strategy is used again.

Write each entry as one line: `- [dc-<n>] <strategy or pitfall> (count: <k>)`.

Output the complete new cheatsheet between <cheatsheet> and </cheatsheet>; nothing of the old one survives unless
you copy it in.
"""

PAIRS_START = ("### PREVIOUS SOLUTIONS (START)\n\nNote: the tasks below are earlier ones of this stream with what "
               "the agent did on them. They may help with strategies and tool use, but they may contain errors or "
               "not fit the task at hand: check them and adapt them, never copy them blindly.")
PAIRS_END = "#### PREVIOUS SOLUTIONS (END)"


def render_pairs(pairs: list[tuple[str, str, float]]) -> str:
    """The retrieved (task, what the agent did, similarity), most similar last; "(empty)" when there are none."""
    if not pairs:
        return EMPTY_CHEATSHEET
    body = "\n\n".join(f"#### Previous Input #{i} (Similarity: {sim:.2f}):\n\n{task}\n\n"
                       f"#### Model Solution to Previous Input #{i}:\n\n{done}\n---\n---"
                       for i, (task, done, sim) in enumerate(pairs, start=1))
    return f"{PAIRS_START}\n\n{body}\n\n{PAIRS_END}"


def rs_curator_turn(previous: str, notes: str, next_input: str) -> str:
    return (f"## Previous cheatsheet\n{previous}\n\n## Notes for cheatsheet\n{notes}\n\n"
            f"## Next input\n{next_input}\n\n## Your new cheatsheet")


@dataclass
class RetrievalSynthesisCheatsheet(Cheatsheet):
    embedder: Optional[Embedder] = None
    _inputs: list[str] = field(init=False, repr=False, default_factory=list)
    _outputs: list[str] = field(init=False, repr=False, default_factory=list)
    _synthesised: dict[str, str] = field(init=False, repr=False, default_factory=dict)  # task id -> its cheatsheet
    _lost: set[str] = field(init=False, repr=False, default_factory=set)  # tasks whose synthesis call failed

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.embedder is None:
            from memory_kit.embeddings import make_embedder

            self.embedder = make_embedder(self.opts.embedder, cache_dir=self.opts.embed_cache)
        self._vectors = np.zeros((0, 1), dtype=np.float32)

    def retrieve(self, query: str) -> list[tuple[str, str, float]]:
        """The top_k past (task, what the agent did, similarity) most similar to `query`, most similar last."""
        if not self._inputs:
            return []
        assert self.embedder is not None
        sims = stable_similarity(self._vectors @ np.asarray(self.embedder.embed([query])[0], np.float32))
        order = rank_rows(sims, np.arange(len(self._inputs)))[: self.opts.top_k]
        return [(self._inputs[int(i)], self._outputs[int(i)], float(sims[int(i)])) for i in order][::-1]

    def deliver(self, task: TaskView, step: StepView) -> Delivery:
        query = seen_task_text(task, step)
        with self._lock:  # one synthesis per task, as soon as the agent knows its task
            if query and task.task_id not in self._synthesised:
                notes = render_pairs(self.retrieve(query))
                try:
                    answer = self.curator().ask(RS_CURATOR_SYSTEM, rs_curator_turn(self.cheatsheet, notes, query),
                                                "dc_curator")
                    self.cheatsheet = self._synthesised[task.task_id] = extract_cheatsheet(answer, notes)
                except RoleCallFailed:  # this task's update is lost (its learn says so): the last cheatsheet stays
                    self._synthesised[task.task_id] = self.cheatsheet
                    self._lost.add(task.task_id)
            text = self._synthesised.get(task.task_id, self.cheatsheet)
        return delivered(text, self.framed())

    def learn(self, trajectory: Trajectory, rerun: Optional[Rerun] = None, gold: Optional[Gold] = None,
              samples: Optional[int] = None) -> Mapping[str, Any]:
        if trial := other_stream(self.stream_trial, trajectory):  # the episode's own stream learns it
            return self.for_trial(trial).learn(trajectory, rerun, gold, samples)
        task = query_of(trajectory)
        assert self.embedder is not None
        vec = np.asarray(self.embedder.embed([task]), np.float32)
        with self._lock:
            self._vectors = vec if not self._inputs else np.vstack([self._vectors, vec])
            self._inputs.append(task)
            self._outputs.append(render_trajectory(trajectory))
            lost = trajectory.task.task_id in self._lost  # its synthesis before the episode failed
            return {"dc_pairs": len(self._inputs), **({"update_lost": True} if lost else {})}

    def state_data(self) -> dict[str, Any]:
        return {**super().state_data(), "inputs": list(self._inputs), "outputs": list(self._outputs),
                "lost": sorted(self._lost)}

    def set_state_data(self, state: Mapping[str, Any]) -> None:
        super().set_state_data(state)
        inputs = [str(x) for x in state["inputs"]]
        if inputs != self._inputs:  # embedded one by one, as learn embeds them
            assert self.embedder is not None
            vectors = [np.asarray(self.embedder.embed([task]), np.float32) for task in inputs]
            self._vectors = np.vstack(vectors) if vectors else np.zeros((0, 1), dtype=np.float32)
            self._inputs = inputs
        self._outputs = [str(x) for x in state["outputs"]]
        self._lost = {str(x) for x in state.get("lost", ())}

    def new_stream(self) -> Self:
        return type(self)(options=dict(self.options), llm=self.llm, embedder=self.embedder,
                          start=self.start).started()
