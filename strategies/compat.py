"""Strategies written against the protocol before its capabilities were declared, fitted once when the registry
loads them: a plain factory function, a class with `create(ctx)` that does not inherit `StrategyBase`, or one
that learns in `update(trajectory)`, the member `learn` replaced (it is called as the strategy's `learn`).

This is the one place that reads the old, optional shape (attributes a strategy might have). What it builds
is given `StrategyBase`'s defaults for the members it lacks, so the harness calls every capability plainly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Optional, Sequence, cast

from strategies.base import Delivery, Gold, Rerun, StepView, Strategy, StrategyBase, TaskView, Trajectory


class LegacyFactory:
    """A registered object that is not a StrategyBase class, read as the old protocol read it: `known_options`
    (absent: none, or unchecked names when it has a `validate_options` hook), the optional hooks, and `create`
    (else the object is called with the context)."""

    def __init__(self, obj: Any):
        self.obj = obj
        declared = getattr(obj, "known_options", None)
        hook = getattr(obj, "validate_options", None)
        self.known_options: Optional[tuple[str, ...]] = tuple(declared) if declared is not None else \
            (None if hook is not None else ())
        self.uses_memory = bool(getattr(obj, "uses_memory", True))
        self.memory_entry_only = bool(getattr(obj, "memory_entry_only", False))
        self._validate, self._ground_truth = hook, getattr(obj, "uses_ground_truth", None)
        self._create = getattr(obj, "create", None) or obj

    def validate_options(self, options: dict[str, Any]) -> None:
        if self._validate is not None:
            self._validate(dict(options))

    def uses_ground_truth(self, options: dict[str, Any]) -> bool:
        return bool(self._ground_truth(dict(options))) if self._ground_truth is not None else False

    def check_memory(self, path: Optional[str]) -> None:
        return None  # an old plugin checks its artifact when it is built

    def learns_online_with(self, options: dict[str, Any]) -> bool:
        declared = getattr(self.obj, "learns_online", False)  # an old plugin declares it on its class, if at all
        return declared if isinstance(declared, bool) else False

    def plan_estimate(self, memory: Optional[str], count: Any, options: dict[str, Any]) -> Any:
        return None  # an old plugin declares nothing: the plan counts the full block, an upper bound

    frame = None  # an old plugin declares no frame: no control arm matches it

    def delivered_frame(self, options: dict[str, Any]) -> None:
        return None

    def memory_of(self, options: Any) -> None:
        return None  # it reads its own memory entry

    @property
    def trial_streams(self) -> bool:
        declared = getattr(self.obj, "trial_streams", False)
        return declared if isinstance(declared, bool) else False

    def create(self, ctx: Any) -> Strategy:
        return fitted(self._create(ctx))


def learns_by_update(obj: Any) -> bool:
    """An old strategy (class or instance) whose update is `update(trajectory)`: it has one and no `learn` of its
    own (StrategyBase's default learns nothing)."""
    cls = obj if isinstance(obj, type) else type(obj)
    own_learn = getattr(cls, "learn", None)
    return callable(getattr(cls, "update", None)) and own_learn in (None, StrategyBase.learn)


def fitted(built: Any) -> Strategy:
    """`built` itself when it implements the whole protocol, else wrapped with the defaults it lacks; a clear
    TypeError when it has not even build/deliver and a way to learn (learn, or the old update)."""
    if isinstance(built, (StrategyBase, Strategy)) and not learns_by_update(built):
        return cast(Strategy, built)  # a StrategyBase subclass writes deliver()
    if not all(callable(getattr(built, m, None)) for m in ("build", "deliver")) or \
            not any(callable(getattr(built, m, None)) for m in ("learn", "update")):
        raise TypeError(f"{type(built).__name__} does not implement the Strategy protocol (build/deliver/learn); "
                        "inherit strategies.StrategyBase and write deliver()")
    return LegacyStrategy(built)


@dataclass(eq=False)
class LegacyStrategy:
    """An old-protocol strategy with the members it lacks defaulted as StrategyBase does."""

    inner: Any

    @property
    def name(self) -> str:
        return str(getattr(self.inner, "name", type(self.inner).__name__))

    @property
    def learns_online(self) -> bool:
        return bool(getattr(self.inner, "learns_online", False))

    @property
    def trial_streams(self) -> bool:
        return bool(getattr(self.inner, "trial_streams", False))

    def build(self, trajectories: Sequence[Trajectory]) -> None:
        self.inner.build(trajectories)

    def deliver(self, task: TaskView, step: StepView) -> Delivery:
        return self.inner.deliver(task, step)

    def learn(self, trajectory: Trajectory, rerun: Optional[Rerun] = None, gold: Optional[Gold] = None,
              samples: Optional[int] = None) -> Mapping[str, Any]:
        if learns_by_update(self.inner):
            self.inner.update(trajectory)
            return {}
        return self.inner.learn(trajectory, rerun, gold, samples) or {}

    def for_trial(self, trial: int) -> Strategy:
        own = getattr(self.inner, "for_trial", None)
        view = own(trial) if own is not None else self.inner
        return self if view is self.inner else fitted(view)

    def record_facts(self, trajectory: Optional[Trajectory]) -> Mapping[str, Any]:
        own = getattr(self.inner, "record_facts", None)
        return dict(own(trajectory)) if own is not None else {}

    def applied_episodes(self) -> Optional[frozenset[str]]:
        own = getattr(self.inner, "applied_episodes", None)
        applied = own() if own is not None else None
        return frozenset(applied) if applied is not None else None

    def stream_state(self, trial: int) -> Optional[dict[str, Any]]:
        return None  # an old-protocol learner keeps no state as data

    def restore_stream(self, trial: int, state: Mapping[str, Any]) -> None:
        return None
