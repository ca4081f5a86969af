"""`ace`: a frozen playbook (strategies/ace/online.py: `ace_online`, the playbook learns after every episode).

Both deliver the whole rendered playbook at every step (ACE's design: the Generator sees everything).
Where the playbook comes from: option `playbook=<path>` if set, else the run's `memory=` artifact.
Either file may be an ACE playbook (`_meta.kind: ace_playbook`) or a plain guideline artifact, which
is converted to bullets with zero counters, so one `MEMORY=` can serve `full` and `ace` in one sweep.

Threads: the runner calls deliver() from its worker threads and update() from the thread of the episode's
stream (ace_online runs one stream per trial side by side: harness/runner/streams.py), so the current delivery
is swapped under a lock and a step always sees one whole playbook. While `learn()`
re-runs a failed task (ACE's reflection rounds), that task alone gets the playbook plus the reflection.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Optional

from memory_kit.memory_file import load_memory
from strategies.ace.adapt import AceSettings, mode_field, token_budget_field
from strategies.ace.playbook import CITE_LINE, HEADER, KIND, Playbook, artifact_kind, learned_with_labels, load_playbook
from strategies.plan_block import NO_ARTIFACT, PlanEstimate, artifact_items
from strategies.ace.pruning import enforce_budget
from strategies.ace.pruning import drop_order
from strategies.ace.roles import cited_steps
from strategies.base import Delivery, StepView, StrategyBase, TaskView, Trajectory
from memory_kit.budget import fit_budget, token_counter
from strategies.declaration import Declaration
from strategies.frame import Frame
from strategies.options import budget_field
from strategies.plan_block import Count
from strategies.registry import StrategyContext

HISTORY = "history.jsonl"
LATEST = "playbook.jsonl"
SNAPSHOTS = "snapshots"


@dataclass(frozen=True)
class AceOptions:
    """The frozen `ace`'s options: where its playbook comes from (null: the run's memory=), the per-delivery cap,
    and the playbook settings that shape what it delivers (strategies/ace/adapt.py AceSettings)."""

    playbook: Optional[str] = None
    playbook_token_budget: Optional[int] = token_budget_field()
    cite: bool = True
    mode: str = mode_field()
    enforce_budget: Optional[bool] = None
    budget_tokens: Optional[int] = budget_field()

    def settings(self) -> AceSettings:
        return AceSettings(mode=self.mode, playbook_token_budget=self.playbook_token_budget, cite=self.cite,
                           enforce_budget=self.enforce_budget)

    def __post_init__(self) -> None:
        self.settings()


def starting_playbook(memory: Optional[str], count: Count, opts: Any) -> PlanEstimate:
    if artifact_items(memory) is None:
        return NO_ARTIFACT
    playbook, _ = read_playbook_or_guidelines(str(memory))
    return PlanEstimate(float(count(playbook.render())), "ACE playbook as it starts (it grows online)")


FRAME = Frame("ace_playbook", HEADER, CITE_LINE)  # the citation line only under `cite` (the default)


def now_utc() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def playbook_only(path: Optional[str]) -> None:
    """`memory_by_strategy.ace` names an ACE playbook learned by `make ace`, never a plain guideline file."""
    if path and artifact_kind(path) != KIND:
        raise ValueError(f"memory_by_strategy.ace={path} is not an ACE playbook (_meta.kind {KIND!r}); "
                         "learn one with `make ace` on train")

class AcePlaybook(StrategyBase):
    """`ace`: deliver one frozen playbook, whole, at every step."""

    name = "ace"
    declaration = Declaration(options=AceOptions, frame=FRAME, plan=starting_playbook, check_entry=playbook_only,
                              labelled_by_default=True)

    def __init__(self, playbook: Playbook, *, settings: AceSettings | None = None,
                 count_tokens: Callable[[str], int] | None = None, artifacts_dir: Path | None = None,
                 meta: dict[str, Any] | None = None, options: dict[str, Any] | None = None):
        self.settings = settings or AceSettings()
        self.count_tokens = count_tokens or token_counter(None)
        self.artifacts_dir = Path(artifacts_dir) if artifacts_dir else None
        self.meta = dict(meta or {})
        self.options = dict(options or {})
        # per delivery (playbook_token_budget: stored)
        self.budget_tokens = self.declaration.parse(self.name, self.options).budget_tokens
        self._lock = threading.Lock()
        self._retry: dict[str, Delivery] = {}  # task id -> playbook + reflection while that task is re-run
        self.updates = 0
        playbook, dropped, tokens = enforce_budget(playbook, self.settings.budget, self.count_tokens,
                                                   self.settings.cite)
        self._set(playbook)
        if dropped:  # a given playbook over the budget is trimmed the same documented way, and it is recorded
            self._write_history({"update": 0, "at": now_utc(), "event": "load", "bullets": len(playbook),
                                 "tokens": tokens, "dropped": dropped})

    # --- the Strategy protocol -----------------------------------------------------------------
    def deliver(self, task: TaskView, step: StepView) -> Delivery:
        with self._lock:
            retry = self._retry.get(task.task_id)
            return retry if retry is not None else self._delivery

    def record_facts(self, trajectory: Trajectory | None) -> dict[str, Any]:
        """Runner hook: fields for the episode's record. `cited_steps`: agent turns that cited a bullet (the
        tables sum it, so a playbook whose counters cannot move shows); `memory_ground_truth`: whether the
        playbook was learned with labels (tables show `ace (no GT)` when it was not)."""
        return self.facts_for(trajectory, self.playbook)

    def facts_for(self, trajectory: Trajectory | None, playbook: Playbook) -> dict[str, Any]:
        """record_facts against `playbook` (an online learner's trial stream: the playbook that trial saw)."""
        facts: dict[str, Any] = {"memory_ground_truth": self.ground_truth}
        if trajectory is not None and self.settings.cite:
            facts["cited_steps"] = cited_steps(trajectory, playbook)
        return facts

    @property
    def ground_truth(self) -> bool | None:
        return learned_with_labels(self.meta)

    # --- state ---------------------------------------------------------------------------------
    @property
    def playbook(self) -> Playbook:
        with self._lock:
            return self._playbook

    def _set(self, playbook: Playbook) -> None:
        delivery = self._fit(playbook)
        with self._lock:
            self._playbook, self._delivery = playbook, delivery

    def _fit(self, playbook: Playbook) -> Delivery:
        """The whole playbook, or within budget_tokens: ACE's own drop order (harmful - helpful, then
        never used, then oldest) is the priority, lowest first."""
        cite = self.settings.cite
        by_id = {b.id: b for b in playbook.bullets}
        rank = {b.id: i for i, b in enumerate(drop_order(playbook.bullets))}  # 0 = dropped first

        def render(kept: Any, note: str) -> str:
            text = Playbook([by_id[g.id] for g in kept], playbook.next_id).render(cite)
            if not note:
                return text
            if not text:
                return f"<ace_playbook>\n{note}\n</ace_playbook>"
            return text[: text.rindex("</ace_playbook>")] + f"{note}\n</ace_playbook>"

        guidelines = playbook.as_guidelines()
        return fit_budget(guidelines, [rank[g.id] for g in guidelines], render, self.count_tokens,
                          self.budget_tokens, noun="bullets")

    def _write_history(self, row: dict[str, Any]) -> None:
        if self.artifacts_dir is None:
            return
        # `guidelines` + `strategy` make the line the memory-history format analysis reads (growth plot)
        row = {**row, "guidelines": row.get("bullets"), "strategy": self.name}
        self.artifacts_dir.mkdir(parents=True, exist_ok=True)
        with (self.artifacts_dir / HISTORY).open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")

    @classmethod
    def create(cls, ctx: StrategyContext) -> "AcePlaybook":
        opts = cls.declaration.parse(cls.name, ctx.options)
        source = opts.playbook or ctx.memory_path
        if not source:
            raise ValueError("strategy 'ace' needs a playbook: pass memory=<path> (MEMORY= in make) or "
                             "strategy.options.playbook=<path>; an ACE playbook or a guideline file")
        playbook, meta = read_playbook_or_guidelines(source)
        return cls(playbook, settings=opts.settings(), count_tokens=token_counter(ctx.model),
                   artifacts_dir=ctx.artifacts_dir, meta={**meta, "source": str(source)}, options=dict(ctx.options))


def read_playbook_or_guidelines(path: str | Path) -> tuple[Any, dict[str, Any]]:
    """An ACE playbook as is; a plain guideline artifact converted to bullets (counters zero)."""
    if artifact_kind(path) == KIND:
        return load_playbook(path)
    guidelines, meta = load_memory(path)
    return Playbook.from_guidelines(guidelines), {**meta, "converted_from": str(path)}
