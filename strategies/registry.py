"""Strategy registry, fed by the `memdeliv.strategies` entry-point group.

Built-ins are declared in this repo's pyproject exactly as a plugin package declares its own, so
`pip install my-plugin` is the whole plugin story. `register()` exists for tests and notebooks.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping

from strategies.base import Guideline, Strategy, StrategyBase
from strategies.compat import LegacyFactory, learns_by_update
from foundation.plugins import PluginRegistry

if TYPE_CHECKING:  # the kit builds on this package: importing it here at load time would close a circle
    from memory_kit.role_client import RoleClient

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
    # the run's model client for a strategy's own roles (memory_kit/role_client.py): the harness's retries and
    # backoff, model.api_key_env, the served kwargs; None (a test, a notebook): `model` and `model_kwargs` alone
    client: RoleClient | None = None
    # the job's benchmark, split, model, task set and whether labels are learned from: an online learner
    # adds the tasks it learned from and writes it as `_meta.learned_from` (memory_kit/memory_file.py)
    learned_from: dict[str, Any] | None = None

    def run_client(self) -> RoleClient:
        """The client every role of the strategy calls through (RoleLLM.of / RoleClient.for_role pick its model)."""
        from memory_kit.role_client import RoleClient

        return self.client if self.client is not None else RoleClient(self.model or "", dict(self.model_kwargs))

    def require_memory(self, strategy: str) -> list[Guideline]:
        from memory_kit.memory_file import load_memory

        if not self.memory_path:
            raise ValueError(f"strategy {strategy!r} needs a memory artifact: pass memory=<path> (MEMORY= in make)")
        guidelines, _ = load_memory(self.memory_path)
        return guidelines


_REGISTRY = PluginRegistry(GROUP, "strategy", UnknownStrategy)


def register(name: str, factory: Any) -> None:
    _REGISTRY.register(name, factory)


def available() -> list[str]:
    return _REGISTRY.available()


def strategy_class(name: str) -> Any:
    """What is registered as `name`, with the declared capabilities of `StrategyBase`: the class itself, or an
    old-protocol factory (or a class that learns in `update`) fitted by strategies/compat.py."""
    obj = _REGISTRY.load(name)
    current = isinstance(obj, type) and issubclass(obj, StrategyBase) and not learns_by_update(obj)
    return obj if current else LegacyFactory(obj)


def known_options(name: str) -> tuple[str, ...] | None:
    """The option names a strategy declares (`known_options`); None when it checks names itself."""
    declared = strategy_class(name).known_options
    return None if declared is None else tuple(declared)


def memory_owner(name: str, options: Mapping[str, Any], table: Mapping[str, Any]) -> str:
    """Whose `memory_by_strategy` entry the job of strategy `name` reads: its own when given, else the one its
    class names (`memory_of`: a control arm's reference), else its own (absent: `memory`)."""
    if name in table:
        return name
    try:
        return strategy_class(name).memory_of(options) or name
    except (UnknownStrategy, ValueError, TypeError, AttributeError):  # an unknown name is refused by the checks
        return name


def job_memory(name: str, options: Mapping[str, Any], table: Mapping[str, Any], memory: str | None) -> str | None:
    """The artifact a job of strategy `name` reads: its owner's `memory_by_strategy` entry when given (null: none),
    else `memory`, unless the owner reads its entry only (`memory_entry_only`: then none)."""
    owner = memory_owner(name, options, table)
    if owner in table:
        return table[owner] or None
    try:
        entry_only = bool(strategy_class(owner).memory_entry_only)
    except (UnknownStrategy, ValueError, TypeError, AttributeError):  # an unknown name is refused by the checks
        entry_only = False
    return None if entry_only else memory


def validate_options(name: str, options: dict[str, Any], sweep: Iterable[str] = ()) -> None:
    """Unknown names are rejected from `known_options`, then the strategy's `validate_options(options)` checks
    values (raise ValueError/TypeError). The CLI calls this for every job before anything is written (exit 2).
    `sweep`: the strategies of the whole sweep; an option one of them declares is not a typo for the others,
    which never see it (`create` drops options that another strategy declares)."""
    declared = known_options(name)
    if declared is not None:
        others = {o for other in sweep if other != name for o in (known_options(other) or ())}
        options = {k: v for k, v in options.items() if k in declared or k not in others}
        unknown = sorted(set(options) - set(declared))
        if unknown:
            raise ValueError(unknown_options_message(name, unknown, list(sweep)))
    strategy_class(name).validate_options(dict(options))


def unknown_options_message(name: str, unknown: list[str], sweep: list[str]) -> str:
    """Which strategies of the sweep take options, and the closest valid name: a typo on a sweep of
    none,full,core_retrieval is nobody's option, not `none`'s fault."""
    takers = {s: known_options(s) for s in dict.fromkeys([*sweep, name])}
    others = [s for s in takers if s != name]
    valid = sorted({o for opts in takers.values() for o in opts or ()})
    close = difflib.get_close_matches(unknown[0], valid, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    if not others:
        known = f"known: {sorted(takers[name] or ())}" if takers[name] else "it takes no options"
        return f"strategy {name!r}: unknown option(s) {unknown}; {known}{hint}"
    said = [f"{s} takes {sorted(opts)}" for s, opts in takers.items() if opts]
    none = [s for s, opts in takers.items() if opts == ()]
    if none:
        said.append(f"{', '.join(none)} take{'s' if len(none) == 1 else ''} no options")
    return (f"unknown option(s) {unknown}: no strategy of this sweep ({', '.join(takers)}) takes "
            f"{'it' if len(unknown) == 1 else 'them'}; {'; '.join(said)}{hint}")


def uses_memory(name: str) -> bool:
    """False for a strategy that ignores `memory=` (the baseline): its rows carry no provenance label."""
    return bool(strategy_class(name).uses_memory)


def uses_ground_truth(name: str, options: dict[str, Any]) -> bool:
    """Whether this strategy, so configured, learns from labels (reward, success, evaluator report, gold
    solution). The harness withholds them otherwise."""
    return bool(strategy_class(name).uses_ground_truth(own_options(name, options)))


def learns_online(name: str, options: dict[str, Any]) -> bool:
    """Whether this strategy, so configured, learns online (read before it is built: `benchmark.orders`, the plan)."""
    return bool(strategy_class(name).learns_online_with(own_options(name, options)))


def check_memory(name: str, path: str | None) -> None:
    """Raises ValueError when this strategy cannot start from the artifact at `path` (None: no memory=), e.g.
    reasoning_bank given a guideline file: the CLI's check, before anything runs."""
    strategy_class(name).check_memory(path)


def trial_streams(name: str) -> bool:
    """Whether an online learner keeps one independent stream per trial (`benchmark.orders` permutes each)."""
    return strategy_class(name).trial_streams is True  # declared by StrategyBase (and the legacy fitting)


def own_options(name: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """The options that reach strategy `name`: another strategy's (one sweep, one options node) never do; a typo
    still does, so its check fails."""
    declared = known_options(name)
    if declared is None:
        return dict(options)
    foreign = {o for other in available() if other != name for o in (known_options(other) or ())}
    return {k: v for k, v in options.items() if k in declared or k not in foreign}


def create(name: str, ctx: StrategyContext) -> Strategy:
    factory = strategy_class(name)
    built = factory.create(replace(ctx, options=own_options(name, ctx.options)))
    if not isinstance(built, Strategy):
        raise TypeError(f"strategy {name!r} does not implement the Strategy protocol (harness calls build, "
                        "deliver, learn, for_trial, record_facts, applied_episodes): inherit "
                        "strategies.StrategyBase")
    return built
