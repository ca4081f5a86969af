"""Strategy registry, fed by the `memdeliv.strategies` entry-point group.

Built-ins are declared in this repo's pyproject exactly as a plugin package declares its own, so
`pip install my-plugin` is the whole plugin story. `register()` exists for tests and notebooks.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterable

from strategies.base import Guideline, Strategy
from strategies.plugins import PluginRegistry

GROUP = "memdeliv.strategies"

Factory = Callable[["StrategyContext"], Strategy]


class UnknownStrategy(KeyError):
    def __str__(self) -> str:  # KeyError quotes its message; keep it readable
        return str(self.args[0])


@dataclass
class StrategyContext:
    """Everything a factory may use to build a strategy for one job."""

    options: dict[str, Any] = field(default_factory=dict)
    memory_path: str | None = None
    artifacts_dir: Path | None = None  # where a learning strategy saves its memory snapshots
    model: str | None = None  # LiteLLM model string of the run, for strategies that call an LLM
    model_kwargs: dict[str, Any] = field(default_factory=dict)
    # the job's benchmark, split, model, task set and whether labels are learned from: an online learner
    # adds the tasks it learned from and writes it as `_meta.learned_from` (strategies/memory_file.py)
    learned_from: dict[str, Any] | None = None

    def require_memory(self, strategy: str) -> list[Guideline]:
        from strategies.memory_file import load_memory

        if not self.memory_path:
            raise ValueError(f"strategy {strategy!r} needs a memory artifact: pass memory=<path> (MEMORY= in make)")
        guidelines, _ = load_memory(self.memory_path)
        return guidelines


_REGISTRY = PluginRegistry(GROUP, "strategy", UnknownStrategy)


def register(name: str, factory: Factory) -> None:
    _REGISTRY.register(name, factory)


def available() -> list[str]:
    return _REGISTRY.available()


def _factory(name: str) -> Any:
    return _REGISTRY.load(name)


def known_options(name: str) -> tuple[str, ...] | None:
    """The option names a strategy declares in its class attribute `known_options`. Without one, a strategy
    that checks its options itself (a `validate_options` hook) declares nothing (None); one that does neither
    takes no options at all (())."""
    factory = _factory(name)
    declared = getattr(factory, "known_options", None)
    if declared is not None:
        return tuple(declared)
    return None if hasattr(factory, "validate_options") else ()


def validate_options(name: str, options: dict[str, Any], sweep: Iterable[str] = ()) -> None:
    """Unknown names are rejected from `known_options`, then the optional hook `validate_options(options)`
    checks values (raise ValueError/TypeError). The CLI calls this for every job before anything is written
    (exit 2). `sweep`: the strategies of the whole sweep; an option one of them declares is not a typo for
    the others, which never see it (`create` drops options that another strategy declares)."""
    declared = known_options(name)
    if declared is not None:
        others = {o for other in sweep if other != name for o in (known_options(other) or ())}
        options = {k: v for k, v in options.items() if k in declared or k not in others}
        unknown = sorted(set(options) - set(declared))
        if unknown:
            known = f"known: {sorted(declared)}" if declared else "it takes no options"
            raise ValueError(f"strategy {name!r}: unknown option(s) {unknown}; {known}")
    hook = getattr(_factory(name), "validate_options", None)
    if hook is not None:
        hook(dict(options))


def uses_memory(name: str) -> bool:
    """False for a strategy that ignores `memory=` (the baseline): its rows carry no provenance label."""
    return bool(getattr(_factory(name), "uses_memory", True))


def uses_ground_truth(name: str, options: dict[str, Any]) -> bool:
    """Optional hook `uses_ground_truth(options)`: whether this strategy, so configured, learns from labels
    (reward, success, evaluator report, gold solution). The harness withholds them otherwise."""
    hook = getattr(_factory(name), "uses_ground_truth", None)
    return bool(hook(dict(options))) if hook is not None else False


def create(name: str, ctx: StrategyContext) -> Strategy:
    factory = _factory(name)
    declared = known_options(name)
    if declared is not None:  # another strategy's options (one sweep, one options node) never reach this one;
        foreign = {o for other in available() if other != name for o in (known_options(other) or ())}
        ctx = replace(ctx, options={k: v for k, v in ctx.options.items()  # a typo still does: its check fails
                                    if k in declared or k not in foreign})
    built = factory.create(ctx) if hasattr(factory, "create") else factory(ctx)
    if not isinstance(built, Strategy):
        raise TypeError(f"strategy {name!r} does not implement the Strategy protocol (build/deliver/update)")
    return built
