"""`ace_retrieval`: an ACE playbook delivered as the top_k bullets most relevant to what the agent has seen.

ACE's authors found that playbooks grow past 100K tokens and that a top-k sub-playbook, chosen per task by
embedding similarity or by an LLM ranker, keeps most of the gain for a small share of the tokens
(ace-agent.github.io, "ACE retrieval"; ace-agent/ace's retriever delivers the top 5 bullets by embedding).

* Query: only what the agent has seen (strategies.base.seen_task_text, the rule core_retrieval follows): the
  task statement where the benchmark shows one (AppWorld), else the user's first message (τ²). Before the agent
  knows its task nothing is delivered. One selection per task and query, so the block stays in the cacheable
  prompt prefix.
* `ranker: embedding`: cosine similarity between the query and each bullet's text (`embedder`).
  `ranker: llm`: one JSON call (`ranker_model`, default the run's model) picks up to top_k ids from the whole
  playbook. The call is the strategy's own and is counted where it is made: in the token ledger of the episode
  whose step needed it (strategies.base.report_call), so that episode's row carries the `strategy` role of its
  `usage` (prompt, completion, cost: null when LiteLLM has no price, calls); an episode served from the cache
  made no call and has no such role.
* Rendered exactly as `ace` renders a playbook (`[id] helpful=X harmful=Y :: text` under section headings,
  cite line included), so cited ids and counters mean the same; `cited_steps` is recorded as for `ace`.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Callable, Optional

import numpy as np

from strategies.ace.llm import JSON_MODES, JsonLLM
from strategies.ace.playbook import Playbook, learned_with_labels
from strategies.ace.roles import cited_steps
from strategies.base import Delivery, Embedder, StepView, StrategyBase, TaskView, Trajectory, seen_task_text
from memory_kit.budget import fit_budget, token_counter
from strategies.declaration import Declaration
from strategies.ace.strategy import read_playbook_or_guidelines
from strategies.options import budget_field, option
from strategies.registry import StrategyContext
from memory_kit.vector_search import rank_rows

NAME = "ace_retrieval"
RANKERS = ("embedding", "llm")
RANKER_SYSTEM = ("You select the playbook bullets most useful for the task below. Answer with JSON only: "
                 '{"bullet_ids": [ids, most useful first]}, at most TOP_K ids, only ids that appear in the playbook.')


@dataclass(frozen=True)
class RetrievalOptions:
    top_k: int = option(5, min=0, source="ace-agent/ace's retriever: the top 5 bullets")
    ranker: str = option("embedding", choices=RANKERS)
    embedder: str = "minilm"  # memory_kit.embeddings.make_embedder spec
    embed_cache: Optional[str] = ".cache/embeddings"
    playbook: Optional[str] = None  # null: the run's memory= artifact (a playbook or a guideline file)
    cite: bool = True
    budget_tokens: Optional[int] = budget_field()
    ranker_model: Optional[str] = None  # null: the run's model
    ranker_kwargs: Optional[dict[str, Any]] = None  # null: the run's model kwargs when ranker_model is the run's
    ranker_api_key_env: Optional[str] = None
    json_mode: str = option("schema", choices=JSON_MODES)


class AceRetrieval(StrategyBase):
    """Deliver the top_k bullets of a frozen playbook for each task, in ACE's format."""

    name = NAME
    declaration = Declaration(options=RetrievalOptions)

    def __init__(self, playbook: Playbook, options: dict[str, Any] | None = None, *, embedder: Embedder | None = None,
                 ranker: JsonLLM | None = None, count_tokens: Callable[[str], int] | None = None,
                 meta: dict[str, Any] | None = None):
        self.opts: RetrievalOptions = self.declaration.parse(self.name, dict(options or {}))
        self.playbook = playbook
        self.meta = dict(meta or {})
        self.count_tokens = count_tokens or token_counter(None)
        self._bullets = playbook.bullets
        self._vectors: np.ndarray | None = None
        if self.opts.ranker == "embedding" and self._bullets and self.opts.top_k:
            if embedder is None:
                from memory_kit.embeddings import make_embedder

                embedder = make_embedder(self.opts.embedder, cache_dir=self.opts.embed_cache)
            self._vectors = np.asarray(embedder.embed([b.content for b in self._bullets]), dtype=np.float32)
        self.embedder = embedder
        self.ranker = ranker
        if self.opts.ranker == "llm" and ranker is None:
            raise ValueError(f"{NAME}: ranker=llm needs a model (ranker_model, or the run's model)")
        self._lock = threading.Lock()
        self._cache: dict[tuple[str, str], Delivery] = {}

    # --- the Strategy protocol -----------------------------------------------------------------
    def deliver(self, task: TaskView, step: StepView) -> Delivery:
        query = seen_task_text(task, step)
        if not query:
            return Delivery()
        key = (task.task_id, query)
        with self._lock:
            cached = self._cache.get(key)
        if cached is not None:
            return cached
        ids = self._rank(query)
        delivery = self._fit(ids)
        with self._lock:
            self._cache.setdefault(key, delivery)
            return self._cache[key]

    def record_facts(self, trajectory: Trajectory | None) -> dict[str, Any]:
        """`cited_steps` and `memory_ground_truth` as for `ace` (the ranker's calls are in the episode's ledger)."""
        facts: dict[str, Any] = {"memory_ground_truth": self.ground_truth}
        if trajectory is not None and self.opts.cite:
            facts["cited_steps"] = cited_steps(trajectory, self.playbook)
        return facts

    @property
    def ground_truth(self) -> bool | None:
        return learned_with_labels(self.meta)

    # --- selection -----------------------------------------------------------------------------
    def _rank(self, query: str) -> list[str]:
        """Bullet ids, most relevant first, at most top_k."""
        k = min(self.opts.top_k, len(self._bullets))
        if k == 0:
            return []
        if self.opts.ranker == "llm":
            return self._rank_llm(query, k)
        assert self._vectors is not None and self.embedder is not None  # built in __init__ for this ranker
        sims = self._vectors @ np.asarray(self.embedder.embed([query])[0], dtype=np.float32).reshape(-1)
        order = rank_rows(sims, np.arange(len(sims)))[:k]  # rounded (stable_similarity); ties: playbook order
        return [self._bullets[int(i)].id for i in order]

    def _rank_llm(self, query: str, k: int) -> list[str]:
        playbook = "\n".join(b.line for b in self._bullets)
        schema = {"type": "object", "properties": {"bullet_ids": {"type": "array", "items": {"type": "string"}}},
                  "required": ["bullet_ids"]}
        assert self.ranker is not None  # __init__ refuses ranker=llm without one
        answer, _ = self.ranker.ask(RANKER_SYSTEM.replace("TOP_K", str(k)),
                                    f"Task:\n{query}\n\nPlaybook:\n{playbook}", schema, "ace_ranker")
        known = {b.id for b in self._bullets}
        chosen = [i for i in dict.fromkeys(str(x) for x in answer["bullet_ids"]) if i in known]  # unknown ids: ignored
        return chosen[:k]

    def _fit(self, ids: list[str]) -> Delivery:
        """The chosen bullets in playbook order (sections, then age), budget drops the least relevant first."""
        rank = {bullet_id: i for i, bullet_id in enumerate(ids)}
        chosen = [b for b in self._bullets if b.id in rank]
        by_id = {b.id: b for b in chosen}

        def render(kept: Any, note: str) -> str:
            text = Playbook([by_id[g.id] for g in kept], self.playbook.next_id).render(self.opts.cite)
            if not note:
                return text
            if not text:
                return f"<ace_playbook>\n{note}\n</ace_playbook>"
            return text[: text.rindex("</ace_playbook>")] + f"{note}\n</ace_playbook>"

        guidelines = Playbook(chosen, self.playbook.next_id).as_guidelines()
        return fit_budget(guidelines, [-rank[g.id] for g in guidelines], render, self.count_tokens,
                          self.opts.budget_tokens, noun="bullets")

    # --- construction --------------------------------------------------------------------------
    @classmethod
    def create(cls, ctx: StrategyContext) -> "AceRetrieval":
        opts = cls.declaration.parse(cls.name, ctx.options)
        source = opts.playbook or ctx.memory_path
        if not source:
            raise ValueError(f"strategy {NAME!r} needs a playbook: pass memory=<path> (MEMORY= in make) or "
                             f"strategy.options.playbook=<path>; an ACE playbook or a guideline file")
        playbook, meta = read_playbook_or_guidelines(source)
        ranker = _ranker(opts, ctx) if opts.ranker == "llm" else None
        return cls(playbook, dict(ctx.options), ranker=ranker, count_tokens=token_counter(ctx.model),
                   meta={**meta, "source": str(source)})


def _ranker(opts: RetrievalOptions, ctx: StrategyContext) -> JsonLLM:
    if not (opts.ranker_model or ctx.model):
        raise ValueError(f"{NAME}: ranker=llm needs a model; set strategy.options.ranker_model")
    client = ctx.run_client().configured(opts.ranker_model, opts.ranker_kwargs, opts.ranker_api_key_env)
    return JsonLLM.of(client, json_mode=opts.json_mode)

