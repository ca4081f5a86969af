"""Consolidation as ALTK-Evolve does it (`consolidation: altk`, the default of `make memory`).

1. Cluster guidelines by cosine similarity of their SOURCE TASK texts (not of the guideline texts):
   pairs at >= threshold (0.80) are joined, clusters are the connected components (union-find), as
   ALTK-Evolve's `cluster_entities`. Guidelines without a source task text stay alone.
2. Each cluster of two or more is consolidated with ONE LLM call that may reword: lossless, it merges
   only guidelines that ask for the same action under the same trigger and keeps the others separate,
   naming for each output the input indices it covers. The first output that claims an index gets it;
   an index no output claims survives unchanged, and a failed call keeps the whole cluster as it was,
   so no advice is ever lost.
3. A merged guideline keeps the id and source task text of its first member; its support is the number
   of DISTINCT source tasks behind it (ALTK-Evolve sums member supports instead; with one extraction per
   trajectory that equals the number of merged guidelines, so a task that repeats a rule, or several
   trials of one task, would count more than once: distinct tasks is our project-wide meaning of support).
   ALTK-Evolve's support is still conserved: every input is attributed to exactly one output
   (`Consolidated.member_counts` sums to the number of inputs).

Modes, as ALTK-Evolve's `consolidation_mode`: `none` (no consolidation), `lossless` (the default; the prompt
above) and `lossy` (its aggressive prompt: "merge liberally", aiming for about `target` guidelines, 12 by
default, per cluster). ALTK-Evolve stops there, so its lossy output can stay above the target; ours then
combines all survivors once more as one cluster with the same prompt (a project addition, so that `target`
bounds the artifact); whatever the model still returns is kept, never cut.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable, Literal, Sequence

import numpy as np
from pydantic import BaseModel, Field

from strategies import Embedder, Guideline
from memory_kit.consolidation import Consolidated, Merge
from memory_kit.llm_json import TextLLM, ask_json

MODES = ("none", "lossless", "lossy")
DEFAULT_TARGET = 12  # ALTK-Evolve's lossy_target_num_guidelines

_LOSSLESS = """Merge guidelines LOSSLESSLY: two guidelines become one only if following one is the same as \
following the other (the same action under the same trigger); wording and examples may differ. Guidelines \
about different actions, triggers, tools or edge cases stay SEPARATE; when in doubt, keep them apart."""
_LOSSY = """Combine them into a SMALL set (aim for about {target}) of consolidated guidelines. Merge liberally: \
group guidelines that address related actions or the same phase of work, even if the wording differs."""
_RULES = """You may reword a merged guideline into its clearest form, keeping specific details (tool names, \
parameters); never invent advice.
Every input index must appear in exactly one output's source_indices.
Answer with JSON only:
{"guidelines": [{"text": "...", "rationale": "...", "category": "strategy|recovery|optimization", \
"trigger": "...", "source_indices": [0, 2]}]}"""
SYSTEM = f"You consolidate guidelines for an AI agent that were learned on SIMILAR tasks.\n{_LOSSLESS} {_RULES}"


def system_prompt(mode: str = "lossless", target: int = DEFAULT_TARGET) -> str:
    if mode == "lossless":
        return SYSTEM
    return f"You consolidate guidelines for an AI agent that were learned on SIMILAR tasks.\n" \
           f"{_LOSSY.format(target=target)} {_RULES}"


class ConsolidatedItem(BaseModel):
    text: str = Field(min_length=3)
    rationale: str = ""
    category: Literal["strategy", "recovery", "optimization"] = "strategy"
    trigger: str = ""
    source_indices: list[int]


class ConsolidationAnswer(BaseModel):
    guidelines: list[ConsolidatedItem]


def cluster_by_source_task(guidelines: Sequence[Guideline], embedder: Embedder,
                           threshold: float = 0.80) -> tuple[list[list[int]], np.ndarray | None]:
    """-> (clusters as index lists in input order, singletons included; the source-task similarity matrix)."""
    with_text = [i for i, g in enumerate(guidelines) if g.source_task_text.strip()]
    parent = list(range(len(guidelines)))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    sims = None
    if len(with_text) >= 2:
        texts = [guidelines[i].source_task_text for i in with_text]
        unique = list(dict.fromkeys(texts))  # one embedding per distinct task text
        vectors = np.asarray(embedder.embed(unique), dtype=np.float32)
        rows = vectors[[unique.index(t) for t in texts]]
        sims = np.full((len(guidelines), len(guidelines)), np.nan, dtype=np.float32)
        sims[np.ix_(with_text, with_text)] = rows @ rows.T
        for a in range(len(with_text)):
            for b in range(a + 1, len(with_text)):
                i, j = with_text[a], with_text[b]
                if sims[i, j] >= threshold:
                    parent[find(i)] = find(j)
    groups: dict[int, list[int]] = {}
    for i in range(len(guidelines)):
        groups.setdefault(find(i), []).append(i)
    return sorted(groups.values(), key=lambda g: g[0]), sims


def consolidation_messages(members: Sequence[Guideline], mode: str = "lossless",
                           target: int = DEFAULT_TARGET) -> list[dict[str, str]]:
    tasks = "\n".join(f"- {t}" for t in dict.fromkeys(g.source_task_text for g in members if g.source_task_text))
    listed = "\n".join(f"[{i}] {g.text} (trigger: {g.trigger or 'n/a'}; category: {g.category}; "
                       f"rationale: {g.rationale or 'n/a'})" for i, g in enumerate(members))
    user = f"The guidelines came from tasks like:\n{tasks}\n\nGuidelines (0-based index):\n{listed}\n\n" \
           "Consolidate them."
    return [{"role": "system", "content": system_prompt(mode, target)}, {"role": "user", "content": user}]


def check_mode(mode: str, target: int) -> None:
    """Bad options are refused before anything is built."""
    if mode not in MODES:
        raise ValueError(f"consolidation mode {mode!r}; valid: {', '.join(MODES)}")
    if isinstance(target, bool) or not isinstance(target, int) or target < 1:
        raise ValueError(f"lossy target must be a whole number >= 1, got {target!r}")


def consolidate_altk(guidelines: Sequence[Guideline], embedder: Embedder | None, llm: TextLLM,
                     threshold: float = 0.80, mode: str = "lossless", target: int = DEFAULT_TARGET) -> Consolidated:
    """`mode` none | lossless | lossy; `target` is lossy's aim (guidelines). `embedder` may be None for none."""
    check_mode(mode, target)
    out = Consolidated(guidelines=[])
    if mode == "none":
        out.guidelines.extend(guidelines)
        return out
    assert embedder is not None  # only mode none goes without one
    clusters, sims = cluster_by_source_task(guidelines, embedder, threshold)
    for cluster in clusters:
        members = [guidelines[i] for i in cluster]
        if len(members) == 1:
            out.guidelines.append(members[0])
            continue

        def similarity(a: int, b: int, cluster: list[int] = cluster) -> float:  # of the two source tasks
            return float(sims[cluster[a], cluster[b]]) if sims is not None else float("nan")

        _combine(members, similarity, out, llm, mode, target, "llm-cluster")
    if mode == "lossy" and len(out.guidelines) > target:  # the clusters alone did not reach the target
        survivors, out.guidelines = out.guidelines, []
        _combine(survivors, lambda a, b: float("nan"), out, llm, mode, target, "llm-lossy-target")
    return out


def _combine(members: Sequence[Guideline], similarity: Callable[[int, int], float], out: Consolidated, llm: TextLLM,
             mode: str, target: int, decided_by: str) -> None:
    """One LLM call consolidates `members` into `out`; every member ends in exactly one output."""
    out.llm_calls += 1
    answer = ask_json(llm, consolidation_messages(members, mode, target), ConsolidationAnswer,
                      what=f"consolidation of {[g.id for g in members]}")
    if answer.value is None:
        out.failed_decisions.append({"cluster": [g.id for g in members], "error": answer.error})
        out.guidelines.extend(members)  # no valid answer: keep the cluster as it was
        return
    claimed = [False] * len(members)
    for item in answer.value.guidelines:
        idxs = [i for i in dict.fromkeys(item.source_indices) if 0 <= i < len(members) and not claimed[i]]
        if not idxs:
            continue
        for i in idxs:
            claimed[i] = True
        first = members[idxs[0]]
        sources = tuple(dict.fromkeys(t for i in idxs for t in members[i].source_task_ids))
        merged = replace(first, text=item.text.strip(), rationale=item.rationale.strip() or first.rationale,
                         category=item.category, trigger=item.trigger.strip() or first.trigger,
                         source_task_ids=sources, support=max(1, len(sources)))
        out.guidelines.append(merged)
        for i in idxs[1:]:
            out.merges.append(Merge(members[i].id, first.id, round(similarity(idxs[0], i), 4), decided_by,
                                    members[i].source_task_ids))
    out.guidelines.extend(m for m, done in zip(members, claimed) if not done)  # unclaimed: kept as they were
