"""One ACE update: trajectory -> Reflector -> counters [-> re-run -> Reflector ...] -> Curator -> deltas
-> (optional) dedup -> (optional) budget.

Pure apart from the two role calls: it takes a playbook and returns a new one plus a report of
everything that happened (the line the online strategy writes to its history). A failed role call
leaves the playbook as it was before that role (counters from a successful Reflector are kept).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from strategies.ace.deltas import MAX_CONTENT_CHARS, OPERATIONS, apply_operations
from strategies.ace.llm import JsonLLM, RoleError
from strategies.ace.playbook import SECTION_SETS, Playbook
from strategies.ace.pruning import EmbeddingCache, deduplicate, enforce_budget
from strategies.ace.roles import Reflection, cited_ids, curate, reflect, render_trajectory
from strategies.base import Trajectory
from strategies.options import option

DEFAULT_TOKEN_BUDGET = 80_000  # the ACE reference's default (stated in its prompt; enforced only on request)
DEFAULT_DEDUP_THRESHOLD = 0.90  # the reference's bulletpoint analyzer threshold (opt-in there too)
DEFAULT_REFLECTION_ROUNDS = 3  # ace-agent/ace `max_num_rounds`
EXTENDED_MAX_OPERATIONS = 10  # our cap per update in extended mode (the reference has none)
MODES = ("paper", "extended")


def mode_field() -> Any:
    return option("paper", choices=MODES)


def token_budget_field() -> Any:
    """The playbook's size cap: the reference's token_budget (not budget_tokens, which caps each delivery)."""
    return option(DEFAULT_TOKEN_BUDGET, min=1, renamed_from="token_budget", source="ace-agent/ace: token_budget=80000")


@dataclass(frozen=True)
class AceSettings:
    """`mode: paper` runs ACE as its reference code does; `extended` turns on our three extensions at once.
    Each extension also has its own option; `None` there means "as the mode says"."""

    mode: str = mode_field()
    update_remove: bool | None = None  # Curator UPDATE / REMOVE (reference: ADD only)
    dedup: bool | None = None  # embedding de-duplication (reference: opt-in analyzer, off)
    enforce_budget: bool | None = None  # drop bullets over the budget below (reference: only stated in the prompt)
    playbook_token_budget: int | None = token_budget_field()
    dedup_threshold: float | None = DEFAULT_DEDUP_THRESHOLD  # None also turns de-duplication off
    allow_ground_truth: bool = False  # show the Reflector the reward, the evaluator's report and the gold solution
    # offline: reflect -> re-run a failed episode, at most N
    reflection_rounds: int = option(DEFAULT_REFLECTION_ROUNDS, min=0, source="ace-agent/ace: max_num_rounds=3")
    retry_without_ground_truth: bool = False  # re-run failed episodes even when labels are not allowed
    cite: bool = True  # ask the Generator to cite bullet ids (and read them back)
    max_trajectory_chars: int = 24_000
    max_content_chars: int | None = None  # None = as the mode says (paper: no cap, as the reference; extended: 600)
    # Curator operations per update; None = as the mode says (paper: none; extended: 10)
    max_operations: int | None = None
    sections: str = "auto"  # generic (ace-agent/ace) | appworld (ace-appworld) | auto: appworld on AppWorld
    # Reflector / Curator calls: transient provider errors retried as agent calls are; None: the run's model's
    # (model.max_retries, model.retry_backoff_s: first wait, doubling)
    role_max_retries: int | None = None
    role_retry_backoff_s: float | None = None

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, got {self.mode!r}")
        if self.playbook_token_budget is not None and self.playbook_token_budget < 1:
            raise ValueError(f"playbook_token_budget must be >= 1 or null, got {self.playbook_token_budget}")
        if self.dedup_threshold is not None and not 0.0 < self.dedup_threshold <= 1.0:
            raise ValueError(f"dedup_threshold must be in (0, 1] or null, got {self.dedup_threshold}")
        if (self.role_max_retries or 0) < 0 or (self.role_retry_backoff_s or 0) < 0:
            raise ValueError("role_max_retries and role_retry_backoff_s must be >= 0")
        if self.reflection_rounds < 0:
            raise ValueError(f"reflection_rounds must be >= 0, got {self.reflection_rounds}")
        if self.sections != "auto" and self.sections not in SECTION_SETS:
            raise ValueError(f"sections must be auto or one of {', '.join(SECTION_SETS)}, got {self.sections!r}")

    def _on(self, value: bool | None) -> bool:
        return self.mode == "extended" if value is None else bool(value)

    @property
    def content_limit(self) -> int | None:
        """Characters per bullet: the reference has no cap, so paper mode has none."""
        if self.max_content_chars is not None:
            return self.max_content_chars
        return MAX_CONTENT_CHARS if self.mode == "extended" else None

    @property
    def operation_limit(self) -> int | None:
        """Curator operations applied per update: the reference applies them all, so paper mode does."""
        if self.max_operations is not None:
            return self.max_operations
        return EXTENDED_MAX_OPERATIONS if self.mode == "extended" else None

    @property
    def operations(self) -> tuple[str, ...]:
        """Curator operations that are applied; the others are rejected and recorded."""
        return OPERATIONS if self._on(self.update_remove) else ("ADD",)

    @property
    def dedup_on(self) -> bool:
        return self._on(self.dedup) and self.dedup_threshold is not None

    @property
    def budget(self) -> int | None:
        """The enforced budget, or None when the budget is only stated to the Curator."""
        return self.playbook_token_budget if self._on(self.enforce_budget) else None

    def section_set(self, benchmark: str) -> str:
        if self.sections != "auto":
            return self.sections
        return "appworld" if benchmark == "appworld" else "generic"

    @property
    def retry_rounds(self) -> int:
        """Reflect-and-retry rounds for a failed offline episode. Deciding to retry uses the evaluator's
        verdict, a label, so without ground truth there are none unless asked for (ace-appworld's no-GT mode
        does not retry; ace-agent/ace does)."""
        if self.allow_ground_truth or self.retry_without_ground_truth:
            return self.reflection_rounds
        return 0


@dataclass
class UpdateReport:
    task_id: str
    reward: float | None  # None: an online learner not allowed ground truth (as the Trajectory's)
    success: bool | None  # the first attempt's verdict
    cited: list[str] = field(default_factory=list)
    tags: dict[str, str] = field(default_factory=dict)
    ignored_tags: list[dict[str, Any]] = field(default_factory=list)
    error_analysis: str = ""
    key_insight: str = ""
    deltas: dict[str, Any] = field(default_factory=dict)
    merged: list[dict[str, Any]] = field(default_factory=list)
    dropped: list[dict[str, Any]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    usage: dict[str, dict[str, int]] = field(default_factory=dict)
    bullets: int = 0
    tokens: int = 0
    rounds: list[dict[str, Any]] = field(default_factory=list)  # one row per reflect -> re-run round
    final_success: bool | None = None  # after the rounds (= success when there were none)
    ground_truth_shown: bool = False  # whether the Reflector saw a gold solution
    lost: bool = False  # a role call failed after its retries, so no Curator delta came from this episode


# Re-runs the same task with this playbook and this reflection in the agent's context -> the new episode.
Rerun = Callable[[Playbook, str], "Trajectory | None"]


def reflection_context(reflection: Reflection) -> str:
    """The reflection as the agent sees it on a retry (ACE's Generator gets the last reflection)."""
    parts = [f"Error analysis: {reflection.error_analysis}"]
    parts += [f"{k.replace('_', ' ').capitalize()}: {v}" for k, v in reflection.detail.items()
              if k in ("root_cause", "correct_approach")]
    parts.append(f"Key insight: {reflection.key_insight}")
    return ("<ace_reflection>\nA reflection on your previous attempt at this same task; use it with the playbook:\n"
            + "\n".join(parts) + "\n</ace_reflection>")


@dataclass
class Adapter:
    reflector: JsonLLM
    curator: JsonLLM
    count_tokens: Callable[[str], int]
    settings: AceSettings = field(default_factory=AceSettings)
    embeddings: EmbeddingCache | None = None  # required when de-duplication is on

    def __post_init__(self) -> None:
        if self.settings.dedup_on and self.embeddings is None:
            raise ValueError("de-duplication is on (dedup / mode=extended) but no embedder was given")

    def step(self, playbook: Playbook, trajectory: Trajectory, rerun: Rerun | None = None,
             gold: str | None = None, progress: tuple[int, int] | None = None) -> tuple[Playbook, UpdateReport]:
        """One ACE training step on a finished episode, as ace-agent/ace's `_train_single_sample`:
        a success is reflected on once (bullet tags); a failure, when `rerun` is given and the settings
        allow rounds, goes through up to `retry_rounds` of reflect -> counters -> re-run with the reflection,
        stopping at the first success; then the Curator runs once (curator_frequency 1) on the last
        reflection. `gold` reaches the Reflector only with allow_ground_truth; `progress` (sample i of N)
        reaches the Curator, as in the reference. A role failure after its retries marks the update `lost`."""
        s = self.settings
        report = UpdateReport(task_id=trajectory.task.task_id, reward=trajectory.reward, success=trajectory.success)
        gold = gold if s.allow_ground_truth else None
        report.ground_truth_shown = bool(gold)
        rounds = s.retry_rounds if rerun is not None and not trajectory.success else 0
        reflection = None
        for round_no in range(max(1, rounds)):
            reflected = self._reflect(playbook, trajectory, gold, report)
            if reflected is None:  # a failed Reflector call: curate on the last good reflection, if any
                if reflection is None:
                    report.lost = True
                    return self._finish(playbook, report, trajectory)
                break
            reflection, playbook = reflected
            if not rounds or rerun is None:  # rounds > 0 only with a rerun
                break
            again = rerun(playbook, reflection_context(reflection))
            if again is None:  # the re-run itself failed outside the agent (infra): stop the rounds
                report.rounds.append({"round": round_no + 1, "error": "re-run failed"})
                break
            trajectory = again
            report.rounds.append({"round": round_no + 1, "reward": trajectory.reward, "success": trajectory.success,
                                  "key_insight": reflection.key_insight, "tags": dict(reflection.tags)})
            if trajectory.success:
                break
        assert reflection is not None  # the first round reflected, or returned above
        try:
            tokens = self.count_tokens(playbook.render(s.cite))
            sections = s.section_set(trajectory.task.benchmark)
            # ace-appworld's Curator reads the whole conversation; ace-agent/ace's reads the question only
            episode = render_trajectory(trajectory, s.max_trajectory_chars) if sections == "appworld" else None
            operations, usage = curate(self.curator, playbook, reflection, tokens=tokens,
                                       token_budget=s.playbook_token_budget,
                                       task=trajectory.task.description, operations=s.operations,
                                       sections=sections, progress=progress, episode=episode)
        except RoleError as exc:
            report.errors.append(str(exc))
            report.lost = True
            return self._finish(playbook, report, trajectory)
        _add_usage(report.usage, "curator", usage)
        merge = apply_operations(playbook, operations, s.content_limit, s.operation_limit, allowed=s.operations,
                                 sections=s.section_set(trajectory.task.benchmark))
        report.deltas = merge.summary()
        return self._finish(merge.playbook, report, trajectory)

    def _reflect(self, playbook: Playbook, trajectory: Trajectory, gold: str | None,
                 report: UpdateReport) -> tuple[Reflection, Playbook] | None:
        s = self.settings
        cited = cited_ids(trajectory, playbook) if s.cite else []
        report.cited = list(dict.fromkeys(report.cited + cited))
        try:
            reflection = reflect(self.reflector, trajectory, playbook, cited, allow_ground_truth=s.allow_ground_truth,
                                 max_trajectory_chars=s.max_trajectory_chars, gold=gold)
        except RoleError as exc:
            report.errors.append(str(exc))
            return None
        _add_usage(report.usage, "reflector", reflection.usage)
        for bullet_id, tag in reflection.tags.items():
            report.tags[bullet_id] = tag  # the last round's tag is shown; every round's tag is counted
        report.ignored_tags += list(reflection.ignored_tags)
        report.error_analysis, report.key_insight = reflection.error_analysis, reflection.key_insight
        return reflection, playbook.count(reflection.tags)

    def _finish(self, playbook: Playbook, report: UpdateReport,
                trajectory: Trajectory | None = None) -> tuple[Playbook, UpdateReport]:
        report.final_success = trajectory.success if trajectory is not None else report.success
        playbook, report.merged = self.tidy_duplicates(playbook)
        playbook, report.dropped, report.tokens = enforce_budget(playbook, self.settings.budget,
                                                                 self.count_tokens, self.settings.cite)
        report.bullets = len(playbook)
        return playbook, report

    def tidy_duplicates(self, playbook: Playbook) -> tuple[Playbook, list[dict[str, Any]]]:
        threshold = self.settings.dedup_threshold  # dedup_on implies it is set
        if not self.settings.dedup_on or self.embeddings is None or threshold is None:
            return playbook, []
        return deduplicate(playbook, self.embeddings, threshold)


def _add_usage(usage: dict[str, dict[str, int]], role: str, more: dict[str, int]) -> None:
    row = usage.setdefault(role, {})
    for key, value in (more or {}).items():
        if isinstance(value, (int, float)):
            row[key] = row.get(key, 0) + value
    row["calls"] = row.get("calls", 0) + 1
