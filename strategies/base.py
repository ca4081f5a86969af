"""The one protocol every memory strategy implements, and the plain types it sees.

Strategies never see a benchmark adapter: tasks, steps and trajectories reach them as the small frozen
types below, so a strategy written for τ²-bench works unchanged on AppWorld.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Protocol, Sequence, runtime_checkable

CATEGORIES = ("strategy", "recovery", "optimization")


@dataclass(frozen=True)
class Guideline:
    """One learned lesson. `support` counts the distinct tasks that produced it."""

    id: str
    text: str
    category: str = "strategy"
    support: int = 1
    source_task_ids: tuple[str, ...] = ()
    rationale: str = ""
    trigger: str = ""
    source_task_text: str = ""  # what retrieval compares the new task against

    def __post_init__(self) -> None:
        if not self.id or not self.text.strip():
            raise ValueError(f"guideline needs an id and non-empty text: {self!r}")
        if self.support < 1:
            raise ValueError(f"guideline {self.id}: support must be >= 1, got {self.support}")


@dataclass(frozen=True)
class TaskView:
    """What a strategy may know about the task at hand."""

    benchmark: str
    task_id: str
    description: str  # the task as the agent was shown it up front ("" when it only learns it by conversation, τ²)


@dataclass(frozen=True)
class StepView:
    """One ReAct step: its index and the conversation so far (role/content dicts)."""

    index: int
    messages: tuple[dict[str, Any], ...] = ()


@dataclass(frozen=True)
class Trajectory:
    """A finished episode, as offline builders and online learners receive it."""

    task: TaskView
    messages: tuple[dict[str, Any], ...]
    reward: float | None  # None for an online learner not allowed ground truth (harness/runner/reflect_and_retry.py)
    success: bool | None
    feedback: str = ""  # evaluator report (DB check, unit tests) when the config allows it
    episode: str | None = None  # "<task_id>#<trial>" from the runner: lets a learner apply each episode once


@dataclass(frozen=True)
class Delivery:
    """What a strategy hands the agent for one step: the guidelines and their rendered text."""

    guidelines: tuple[Guideline, ...] = ()
    text: str = ""
    dropped: tuple[str, ...] = ()  # ids left out to fit strategy.options.budget_tokens (strategies/budget.py)
    # The same memory refitted to a smaller token budget by the strategy's own priorities; the request
    # assembly calls it when the whole request would overflow the model's window. None: not refittable.
    refit: Optional[Callable[[int], "Delivery"]] = field(default=None, compare=False, repr=False)

    @property
    def ids(self) -> list[str]:
        return [g.id for g in self.guidelines]

    @property
    def empty(self) -> bool:
        return not self.text


EMPTY = Delivery()


def first_user_text(messages: Sequence[dict[str, Any]]) -> str:
    """The first user message with text: on τ² this is how the agent learns the task (never the hidden scenario)."""
    for m in messages:
        content = m.get("content")
        if m.get("role") == "user" and isinstance(content, str) and content.strip():
            return content.strip()
    return ""


def seen_task_text(task: TaskView, step: StepView) -> str:
    """What the agent knows of its task at this step: the task statement, else the user's first message."""
    return task.description or first_user_text(step.messages)


class Embedder(Protocol):
    """Text -> L2-normalised vectors (n, d). Implementations live in strategies/embeddings.py."""

    name: str

    def embed(self, texts: Sequence[str]) -> Any: ...


@runtime_checkable
class Strategy(Protocol):
    """Build memory from train trajectories, deliver it per task and step, optionally learn online."""

    name: str
    learns_online: bool  # True: the runner calls update() after every finished episode

    def build(self, trajectories: Sequence[Trajectory]) -> None: ...

    def deliver(self, task: TaskView, step: StepView) -> Delivery: ...

    def update(self, trajectory: Trajectory) -> None: ...


@dataclass
class StrategyBase:
    """Convenience base: no-op build/update, so a strategy only writes `deliver`."""

    name: str = "base"
    options: dict[str, Any] = field(default_factory=dict)
    learns_online: bool = False

    def build(self, trajectories: Sequence[Trajectory]) -> None:
        return None

    def update(self, trajectory: Trajectory) -> None:
        return None


def render_guidelines(guidelines: Sequence[Guideline], title: str = "Learned guidelines", note: str = "") -> str:
    """The default memory block: one bullet per guideline, ids kept so deliveries can be audited.
    `note` (e.g. how many were omitted to fit a budget) goes inside the block, after the bullets."""
    if not guidelines and not note:
        return ""
    lines = [f"<{_tag(title)}>", f"{title} from earlier tasks (follow them when they apply):"]
    lines += [f"- [{g.id}] {g.text}" for g in guidelines]
    if note:
        lines.append(note)
    lines.append(f"</{_tag(title)}>")
    return "\n".join(lines)


def _tag(title: str) -> str:
    return title.lower().replace(" ", "_")
