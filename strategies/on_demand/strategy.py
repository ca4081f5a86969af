"""`on_demand`: memory the agent pulls as a tool, as STATE-Bench's Agent Learning Track delivers it (a read-only
`retrieve_learnings(query, top_k=3)` hook), instead of memory pushed into the prompt.

The prompt carries only a one-line notice that past guidelines can be recalled; the memory tool
`recall_guidelines(query)` answers with the top_k guidelines (default 3, STATE-Bench's value) whose source task is
most similar to the query, ranked by core_retrieval's retriever (strategies/core_retrieval/: the same embedder,
similarity, duplicate skips and IVF index) over the same memory artifact. With `core: true` the core (support >=
core_support) sits in the prompt as core_retrieval delivers it and only the rest is recalled. The agent step
answers the call; the benchmark never sees it (docs/memory-tools.md).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field, replace
from typing import Any, Mapping

from strategies.base import (Delivery, Embedder, Guideline, MemoryTool, MemoryToolError, StepView, StrategyBase,
                             TaskView, render_guidelines)
from memory_kit.selection import GuidelineIndex, RetrievalKnobs
from strategies.declaration import Declaration
from strategies.options import option
from strategies.registry import StrategyContext

TOOL = "recall_guidelines"
NOTICE = (f'Guidelines learned on earlier tasks can be recalled by calling {TOOL}(query="<your situation in a '
          'sentence>") on its own, when a past lesson could help.')
RECALLED = "Recalled guidelines"


@dataclass(frozen=True)
class OnDemandOptions(RetrievalKnobs):
    """core_retrieval's retriever knobs (not its prompt block's: nothing here to re-rank or cap), and `core`."""

    top_k: int = option(3, min=0, source="STATE-Bench's retrieve_learnings(query, top_k=3)")
    core: bool = option(False, means="true or false")  # the core in the prompt, only the rest recalled


@dataclass
class OnDemand(StrategyBase):
    name: str = "on_demand"
    guidelines: tuple[Guideline, ...] = ()
    embedder: Embedder | None = None
    _index: GuidelineIndex = field(init=False, repr=False)
    _delivery: Delivery = field(init=False, repr=False)
    declaration = Declaration(options=OnDemandOptions)

    def __post_init__(self) -> None:
        opts = self.typed_options()
        if not opts.core:  # everything is recalled: no guideline is core
            opts = replace(opts, core_support=sys.maxsize)
        if self.embedder is None:
            from memory_kit.embeddings import make_embedder

            self.embedder = make_embedder(opts.embedder, cache_dir=opts.embed_cache)
        self._index = GuidelineIndex.build(self.guidelines, self.embedder, opts)
        tool = MemoryTool(TOOL, "Recall guidelines learned on earlier, similar tasks. Returns the most relevant "
                          "few; call it again with another query for others.",
                          {"type": "object", "properties": {"query": {
                              "type": "string", "description": "what you are trying to do, in a sentence"}},
                           "required": ["query"], "additionalProperties": False}, self.recall)
        block = render_guidelines(self._index.core)
        self._delivery = Delivery(tuple(self._index.core), f"{block}\n\n{NOTICE}" if block else NOTICE, tools=(tool,))

    def deliver(self, task: TaskView, step: StepView) -> Delivery:
        return self._delivery

    def recall(self, arguments: Mapping[str, Any]) -> Delivery:
        """The tool's answer: the top_k retrieved for the agent's query (the core, when in the prompt, excluded)."""
        query = str(arguments.get("query", "")).strip()
        if not query:
            raise MemoryToolError("query must not be empty")
        assert self.embedder is not None  # set in __post_init__
        core = len(self._index.core)
        found = self._index.select(self.embedder.embed([query])[0])[core:]
        if not found:
            return Delivery((), "No stored guideline matches that query.")
        return Delivery(tuple(found), render_guidelines(found, title=RECALLED))

    @classmethod
    def create(cls, ctx: StrategyContext) -> "OnDemand":
        return cls(options=dict(ctx.options), guidelines=tuple(ctx.require_memory("on_demand")))


