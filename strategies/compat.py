"""Strategies written against an older protocol, fitted once when the registry loads them: a StrategyBase class
that declares itself with class attributes and classmethods (`known_options`, `validate_options`, ...) instead of
a `declaration`, a plain factory function, a class with `create(ctx)` that does not inherit `StrategyBase`, or one
that learns in `update(trajectory)`, the member `learn` replaced (it is called as the strategy's `learn`).

This is the one place that reads the old, optional shape (attributes a strategy might have). What it builds
is given `StrategyBase`'s defaults for the members it lacks, so the harness calls every capability plainly.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, make_dataclass, replace
from typing import Any, ClassVar, Mapping, Optional, cast

from strategies.base import Delivery, Gold, Rerun, StepView, Strategy, StrategyBase, StreamState, TaskView, Trajectory
from strategies.declaration import Declaration, any_memory
from strategies.frame import Frame


LEGACY = ("known_options", "validate_options", "uses_memory", "uses_ground_truth", "learns_online_with",
          "learns_online", "check_memory", "plan_estimate", "frame", "memory_of", "delivered_frame", "trial_streams")
_UNSET: Any = object()  # an option the config did not give


def fit(obj: Any) -> Any:
    """`obj` itself when it is a StrategyBase class that declares itself as today (a `declaration`, or nothing
    old), else fitted once as its old shape reads."""
    if isinstance(obj, type) and issubclass(obj, StrategyBase) and not learns_by_update(obj):
        own = [vars(k) for k in obj.__mro__ if k not in (StrategyBase, object)]
        if any("declaration" in v for v in own) or not any(name in v for v in own for name in LEGACY):
            return obj
    return LegacyFactory(obj)


class LegacyFactory:
    """A registered object in an older shape (a StrategyBase class with the old class-level declarations, a class
    that does not inherit StrategyBase, a plain factory function), read as the old protocol read it: its
    `known_options` (absent: none, or any names when it has a `validate_options` hook), its hooks, and `create`
    (else the object is called with the context)."""

    def __init__(self, obj: Any):
        self.obj = obj
        self._create = getattr(obj, "create", None) or obj
        declared = _declared(obj)
        if declared is not None:  # a declared class fitted only for its `update`: its declaration, old `learns_online`
            self.declaration = replace(declared, online=self._online) if _says_online(obj) else declared
            return
        self.declaration = Declaration(
            options=_options_type(obj), gather="given" if _takes_any(obj) else "",
            uses_memory=bool(getattr(obj, "uses_memory", True)), online=self._online,
            trial_streams=getattr(obj, "trial_streams", False) is True, ground_truth=self._ground_truth,
            frame=frame if isinstance(frame := getattr(obj, "frame", None), Frame) else None,
            memory_of=lambda opts: self._hook("memory_of", opts, None),
            plan=lambda memory, count, opts: self._hook("plan_estimate", opts, None, memory, count),
            check_memory=getattr(obj, "check_memory", None) or any_memory)

    def _hook(self, name: str, opts: Any, absent: Any, *before: Any) -> Any:
        hook = getattr(self.obj, name, None)
        return hook(*before, given(opts)) if hook is not None else absent

    def _online(self, opts: Any) -> bool:
        if getattr(self.obj, "learns_online_with", None) is not None:
            return bool(self._hook("learns_online_with", opts, False))
        declared = getattr(self.obj, "learns_online", False)  # an old plugin declares it on its class, if at all
        return declared if isinstance(declared, bool) else False

    def _ground_truth(self, opts: Any) -> bool:
        return bool(self._hook("uses_ground_truth", opts, False))

    def create(self, ctx: Any) -> Strategy:
        return fitted(self._create(ctx))


def _declared(obj: Any) -> Optional[Declaration]:
    """The declaration a StrategyBase class has from a class of today it extends (None: none but the default)."""
    if not (isinstance(obj, type) and issubclass(obj, StrategyBase)):
        return None
    own = any("declaration" in vars(k) for k in obj.__mro__ if k not in (StrategyBase, object))
    return obj.declaration if own else None


def _says_online(obj: Any) -> bool:
    return isinstance(getattr(obj, "learns_online", None), bool)


def _takes_any(obj: Any) -> bool:
    return getattr(obj, "known_options", None) is None and getattr(obj, "validate_options", None) is not None


def _options_type(obj: Any) -> type:
    """A dataclass of the names it declares (any, when it checks names itself), whose check is its own hook."""
    hook = getattr(obj, "validate_options", None)
    names = () if _takes_any(obj) else tuple(getattr(obj, "known_options", None) or ())
    columns: list[tuple[str, Any, Any]] = [("given", dict, field(default_factory=dict))] if _takes_any(obj) else \
        [(name, Any, field(default=_UNSET)) for name in names]

    def check(self: Any) -> None:
        if hook is not None:
            hook(given(self))

    return make_dataclass("LegacyOptions", columns, frozen=True, namespace={"__post_init__": check})


def given(opts: Any) -> dict[str, Any]:
    """The options the config gave, as the old hooks read them (a dict)."""
    values = {f.name: getattr(opts, f.name) for f in fields(opts)}
    if list(values) == ["given"] and isinstance(values["given"], dict):
        return dict(values["given"])
    return {k: v for k, v in values.items() if v is not _UNSET}


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
    if not callable(getattr(built, "deliver", None)) or \
            not any(callable(getattr(built, m, None)) for m in ("learn", "update")):
        raise TypeError(f"{type(built).__name__} does not implement the Strategy protocol (deliver/learn); "
                        "inherit strategies.StrategyBase and write deliver()")
    return cast(Strategy, LegacyStrategy(built))


@dataclass(eq=False)
class LegacyStrategy:
    """An old-protocol strategy with the members it lacks defaulted as StrategyBase does."""

    inner: Any
    declaration: ClassVar[Declaration] = Declaration()  # the registry reads its factory's (LegacyFactory)

    @classmethod
    def create(cls, ctx: Any) -> Strategy:
        raise TypeError("an old-protocol strategy is built by its registered factory (strategies.create)")

    @property
    def name(self) -> str:
        return str(getattr(self.inner, "name", type(self.inner).__name__))

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
        return cast(Strategy, self) if view is self.inner else fitted(view)

    def record_facts(self, trajectory: Optional[Trajectory]) -> Mapping[str, Any]:
        own = getattr(self.inner, "record_facts", None)
        return dict(own(trajectory)) if own is not None else {}

    @property
    def state(self) -> Optional[StreamState]:
        return None  # an old-protocol learner keeps no state as data
