"""The one protocol every memory strategy implements, and the plain types it sees. Strategies never see a
benchmark adapter: tasks, steps and trajectories reach them as the small frozen types below (τ²-bench, AppWorld).
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Iterator, Mapping, Optional, Protocol, Sequence, runtime_checkable

from strategies.declaration import Declaration
from strategies.frame import Frame

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


class MemoryToolError(ValueError):
    """A memory-tool call the strategy cannot answer (bad arguments): the agent reads the message as a tool error."""


@dataclass(frozen=True)
class MemoryTool:
    """A tool the agent may call to pull memory (on_demand's `recall_guidelines`). The agent step offers it beside
    the benchmark's tools and answers a call itself with `answer(arguments)`: the benchmark never sees the call
    (docs/memory-tools.md). `parameters` is the JSON schema of the arguments (an object); the step checks its
    `required` names and `string` types before calling `answer`, which may raise MemoryToolError for the rest.
    The answer is a Delivery: its text is what the agent reads, its guidelines are the ids it was given."""

    name: str
    description: str
    parameters: Mapping[str, Any]
    answer: Callable[[Mapping[str, Any]], "Delivery"] = field(compare=False, repr=False)

    def schema(self) -> dict[str, Any]:
        """The OpenAI function schema, as benchmark tools are offered."""
        return {"type": "function", "function": {"name": self.name, "description": self.description,
                                                 "parameters": dict(self.parameters)}}


@dataclass(frozen=True)
class Delivery:
    """What a strategy hands the agent for one step: the guidelines and their rendered text, and the memory tools
    the agent may call at this step."""

    guidelines: tuple[Guideline, ...] = ()
    text: str = ""
    dropped: tuple[str, ...] = ()  # ids left out to fit strategy.options.budget_tokens (memory_kit/budget.py)
    # The same memory refitted to a smaller token budget by the strategy's own priorities; the request
    # assembly calls it when the whole request would overflow the model's window. None: not refittable.
    refit: Optional[Callable[[int], "Delivery"]] = field(default=None, compare=False, repr=False)
    tools: tuple[MemoryTool, ...] = field(default=(), compare=False)

    @property
    def ids(self) -> list[str]:
        return [g.id for g in self.guidelines]

    @property
    def empty(self) -> bool:
        return not self.text


EMPTY = Delivery()


def trial_of(episode: Optional[str]) -> int:
    """The trial of an episode key `<task>#<trial>` (None: an offline build, stream 0): an online learner's
    update goes to that trial's stream."""
    tail = episode.rsplit("#", 1)[-1] if episode else ""
    return int(tail) if tail.isdigit() else 0


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
    """Text -> L2-normalised vectors (n, d). Implementations live in memory_kit/embeddings.py."""

    name: str

    def embed(self, texts: Sequence[str]) -> Any: ...


Rerun = Callable[[], Optional[Trajectory]]  # the same task x trial run again (None: it failed outside the agent)
Gold = Callable[[], Optional[str]]  # the task's gold solution (given only when ground truth is allowed, on train)


class StreamState(Protocol):
    """An online learner's streams as JSON-able data (memory_kit/stream_data.py helps): committed with the run
    after each update and restored on resume (harness/runner/stream_state.py), sent with each episode to a Ray
    worker and back (harness/runner/ray_executor.py)."""

    def snapshot(self, trial: int) -> dict[str, Any]:
        """Stream `trial` as data."""

    def restore(self, trial: int, state: Mapping[str, Any]) -> None:
        """Set stream `trial` to a state `snapshot` returned."""


@runtime_checkable
class Strategy(Protocol):
    """Deliver memory per task and step, optionally learn online. Eight members, each with a default in
    `StrategyBase`, so the harness calls each one plainly and never probes for it (as benchmarks:
    harness/benchmarks/protocol.py). What the harness asks before building one is its class's `declaration`
    (strategies/declaration.py); `create(ctx)` builds it for one job."""

    declaration: ClassVar[Declaration]

    @classmethod
    def create(cls, ctx: Any) -> "Strategy":
        """The strategy for one job (ctx: strategies.registry.StrategyContext)."""

    # read-only to the harness: a plain attribute, a class attribute or a property all satisfy it
    @property
    def name(self) -> str: ...

    def deliver(self, task: TaskView, step: StepView) -> Delivery: ...

    def learn(self, trajectory: Trajectory, rerun: Optional[Rerun] = None, gold: Optional[Gold] = None,
              samples: Optional[int] = None) -> Mapping[str, Any]:
        """An online learner's update after one episode (called only when its declaration says it learns online,
        one at a time per stream), or the replay of one lost to a crash (without rerun or gold); `rerun`,
        `gold`: ACE's reflect-and-retry. Returns facts for the episode's row."""

    def for_trial(self, trial: int) -> "Strategy":
        """The strategy trial `trial` sees: an online learner keeps one stream per trial (default: itself)."""

    def record_facts(self, trajectory: Optional[Trajectory]) -> Mapping[str, Any]:
        """The strategy's own columns for an episode's row (ACE: `cited_steps`, `memory_ground_truth`)."""

    @property
    def state(self) -> Optional[StreamState]:
        """Its streams as data (None: it keeps none; the harness then keeps no stream of it)."""


@dataclass(eq=False)  # a strategy is itself, never equal to another with the same options (and hashable)
class StrategyBase:
    """Every optional member of `Strategy` with its no-op default; a strategy writes `deliver` and overrides
    what it has. What the harness asks before building it is its class's `declaration`
    (strategies/declaration.py: typed options, memory, ground truth, online, frame, plan, artifacts);
    `create(ctx)` builds the strategy for one job (default: from its options)."""

    name: str = "base"
    options: dict[str, Any] = field(default_factory=dict)
    declaration: ClassVar[Declaration] = Declaration()

    def typed_options(self) -> Any:
        """Its options as its declaration types them (strategies/options.py), checked."""
        return self.declaration.parse(self.name, self.options)

    @classmethod
    def create(cls, ctx: Any) -> "StrategyBase":  # ctx: strategies.registry.StrategyContext
        return cls(options=dict(ctx.options))

    def learn(self, trajectory: Trajectory, rerun: Optional[Rerun] = None, gold: Optional[Gold] = None,
              samples: Optional[int] = None) -> Mapping[str, Any]:
        return {}

    def for_trial(self, trial: int) -> "StrategyBase":
        return self

    def record_facts(self, trajectory: Optional[Trajectory]) -> Mapping[str, Any]:
        return {}

    @property
    def state(self) -> Optional[StreamState]:
        return None


# --- a strategy's own model calls ---------------------------------------------------------------------------
@dataclass(frozen=True)
class ModelCall:
    """One model call a strategy made itself (ace_retrieval's LLM ranker, ACE's Reflector and Curator, a paid
    embedding), with the provider's token counts and its price (None: unpriced, never a made-up 0)."""

    role: str  # what the call was for: "ace_ranker", "reflector", "curator", "embedder", ...
    model: str
    prompt_tokens: int
    completion_tokens: int = 0
    cost_usd: Optional[float] = None


CallSink = Callable[[ModelCall], None]
_sink: ContextVar[Optional[CallSink]] = ContextVar("memdeliv_strategy_calls", default=None)


@contextmanager
def calls_to(sink: CallSink) -> Iterator[None]:
    """Send every `report_call` made in this context (the episode's thread) to `sink`. The harness binds it to
    the episode's token ledger (harness/ledger.py), so a strategy's calls are counted like the agent's without
    any strategy importing the harness."""
    token = _sink.set(sink)
    try:
        yield
    finally:
        _sink.reset(token)


def report_call(call: ModelCall) -> None:
    """Every model call a strategy makes ends here (strategies/ace/llm.py, memory_kit/embeddings.py do it for
    theirs; a plugin that calls a model itself does the same). Outside an episode (an offline build, a unit test)
    nobody listens and the call is not counted anywhere."""
    sink = _sink.get()
    if sink is not None:
        sink(call)


def render_guidelines(guidelines: Sequence[Guideline], title: str = "Learned guidelines", note: str = "",
                      frame: Optional[Frame] = None) -> str:
    """The default memory block: one bullet per guideline, ids kept so deliveries can be audited; `note` (how
    many were omitted to fit a budget) after the bullets; `frame` (default: `title`'s, as `full` declares it)."""
    if not guidelines and not note:
        return ""
    lines = [f"- [{g.id}] {g.text}" for g in guidelines] + ([note] if note else [])
    return frame.wrap(lines) if frame is not None else memory_frame(lines, title)


INSTRUCTION = "from earlier tasks (follow them when they apply):"  # the memory instruction, after the block's title


def guidelines_frame(title: str = "Learned guidelines") -> Frame:  # `full`'s: title and instruction on one line
    return Frame(_tag(title), title, INSTRUCTION, one_line=True)


def memory_frame(lines: Sequence[str] = (), title: str = "Learned guidelines") -> str:
    """The memory header and instruction around `lines`: with none, what `protocol_only` delivers (the frame
    `full` wraps its guidelines in, no guideline)."""
    return guidelines_frame(title).wrap(lines)


def _tag(title: str) -> str:
    return title.lower().replace(" ", "_")


def learner_start(started_from_train: bool) -> dict[str, str]:
    """An online learner's row column `learner_start`: whether its stream started empty (the papers' default in
    `make sweep`) or from a train artifact (START=train), so rows of two learners show they started alike."""
    return {"learner_start": "train artifact" if started_from_train else "empty"}
