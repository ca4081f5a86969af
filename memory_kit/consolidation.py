"""Consolidation with support counts: "count, don't summarise".

Guidelines are taken in order. For each one, embedding similarity (guideline text vs. the survivors so
far) finds near-duplicate candidates; an LLM decides whether it states the same rule (same action under
the same trigger) as one of them. If so it merges into that survivor, which keeps its own wording and
gains the source task ids; otherwise it becomes a survivor. Support = number of distinct source tasks,
so a rule repeated twice in one task still has support 1. Every merge is recorded for audit.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Sequence

import numpy as np
from pydantic import BaseModel

from strategies import Embedder, Guideline
from memory_kit.llm_json import TextLLM, ask_json

SYSTEM = """You keep a list of guidelines for an agent free of duplicates WITHOUT rewriting any of them.
Two guidelines are the same rule only if they ask for the same action under the same trigger; a related \
or more general rule is NOT the same. Answer with JSON only: {"same_as": "<id of the existing guideline>"} \
or {"same_as": null}."""


class MergeAnswer(BaseModel):
    same_as: str | None = None


@dataclass(frozen=True)
class Merge:
    merged: str  # id of the guideline that disappeared
    into: str  # id of the survivor that kept its wording
    similarity: float
    decided_by: str  # "identical" (same text, no LLM call) or "llm"
    source_task_ids: tuple[str, ...]  # what the merged guideline brought


@dataclass
class Consolidated:
    guidelines: list[Guideline]
    merges: list[Merge] = field(default_factory=list)
    failed_decisions: list[dict[str, Any]] = field(default_factory=list)  # LLM answers skipped as invalid
    llm_calls: int = 0

    def merge_rows(self) -> list[dict[str, Any]]:
        return [{**asdict(m), "source_task_ids": list(m.source_task_ids)} for m in self.merges]

    def member_counts(self) -> dict[str, int]:
        """Inputs behind each output guideline, following merges into merged guidelines: ALTK-Evolve's support
        (each input counting 1). They sum to the number of inputs when nothing was lost."""
        into = {m.merged: m.into for m in self.merges}
        counts = {g.id: 1 for g in self.guidelines}
        for merged in into:
            root = merged
            while root in into:
                root = into[root]
            counts[root] += 1  # a KeyError here: a merge into a guideline that is not in the output
        return counts


def merge_messages(new: Guideline, candidates: Sequence[Guideline]) -> list[dict[str, str]]:
    listed = "\n".join(f"- id={g.id}: {g.text} (trigger: {g.trigger or 'n/a'})" for g in candidates)
    user = f"Existing guidelines:\n{listed}\n\nNew guideline: {new.text} (trigger: {new.trigger or 'n/a'})\n" \
           "Is the new guideline the same rule as one of the existing ones?"
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


def consolidate(guidelines: Sequence[Guideline], embedder: Embedder, llm: TextLLM, threshold: float = 0.80,
                max_candidates: int = 5) -> Consolidated:
    """Merge near-duplicates; `threshold` is the cosine similarity (guideline texts) that makes a candidate."""
    out = Consolidated(guidelines=[])
    if not guidelines:
        return out
    vectors = np.asarray(embedder.embed([g.text for g in guidelines]), dtype=np.float32)
    rows: list[int] = []  # survivor i's vector is vectors[rows[i]]: wording never changes, nor does its vector
    for i, g in enumerate(guidelines):
        target = _find_duplicate(g, vectors[i], rows, vectors, out, llm, threshold, max_candidates)
        if target is None:
            out.guidelines.append(g)
            rows.append(i)
            continue
        index, similarity, decided_by = target
        survivor = out.guidelines[index]
        sources = tuple(dict.fromkeys(survivor.source_task_ids + g.source_task_ids))
        out.guidelines[index] = replace(survivor, source_task_ids=sources, support=max(1, len(sources)))
        out.merges.append(Merge(g.id, survivor.id, round(similarity, 4), decided_by, g.source_task_ids))
    return out


def _find_duplicate(g: Guideline, vec: np.ndarray, rows: list[int], vectors: np.ndarray, out: Consolidated,
                    llm: TextLLM, threshold: float, max_candidates: int) -> tuple[int, float, str] | None:
    if not rows:
        return None
    sims = vectors[rows] @ vec
    order = [int(j) for j in np.argsort(-sims, kind="stable") if sims[j] >= threshold][:max_candidates]
    if not order:
        return None
    for j in order:  # the same words need no judge
        if _norm(out.guidelines[j].text) == _norm(g.text):
            return j, float(sims[j]), "identical"
    candidates = [out.guidelines[j] for j in order]
    out.llm_calls += 1
    answer = ask_json(llm, merge_messages(g, candidates), MergeAnswer, _known_id(candidates),
                      what=f"merge decision for {g.id}")
    if answer.value is None:
        out.failed_decisions.append({"guideline": g.id, "candidates": [c.id for c in candidates],
                                     "error": answer.error})
        return None  # no valid decision: keep both, never lose a guideline
    if answer.value.same_as is None:
        return None
    j = next(j for j in order if out.guidelines[j].id == answer.value.same_as)
    return j, float(sims[j]), "llm"


def _known_id(candidates: Sequence[Guideline]):
    ids = {c.id for c in candidates}

    def check(answer: MergeAnswer) -> str | None:
        if answer.same_as is not None and answer.same_as not in ids:
            return f"same_as must be null or one of {sorted(ids)}, got {answer.same_as!r}"
        return None

    return check


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()
