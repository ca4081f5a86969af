"""Strategy registry, fed by the `memdeliv.strategies` entry-point group.

Built-ins are declared in this repo's pyproject exactly as a plugin package declares its own, so
`pip install my-plugin` is the whole plugin story. `register()` exists for tests and notebooks.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping

from strategies.base import Guideline, Strategy
from strategies.compat import fit
from strategies.declaration import Declaration
from strategies.frame import Frame
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
    """What is registered as `name`, with a `declaration` and `create(ctx)`: the class itself, or a plugin in an
    older documented shape fitted by strategies/compat.py."""
    return fit(_REGISTRY.load(name))


def declaration(name: str) -> Declaration:
    """What strategy `name` declares (strategies/declaration.py)."""
    declared = strategy_class(name).declaration
    assert isinstance(declared, Declaration)
    return declared


def known_options(name: str) -> tuple[str, ...] | None:
    """The option names a strategy declares; None when it takes any (placebo passes them on to its reference)."""
    return declaration(name).names()


def memory_owner(name: str, options: Mapping[str, Any], table: Mapping[str, Any]) -> str:
    """Whose `memory_by_strategy` entry the job of strategy `name` reads: its own when given, else the one it
    declares (`memory_of`: a control arm's reference), else its own (absent: `memory`)."""
    if name in table:
        return name
    try:
        return declaration(name).memory_of(typed_options(name, options)) or name
    except (UnknownStrategy, ValueError, TypeError, AttributeError):  # an unknown name is refused by the checks
        return name


def job_memory(name: str, options: Mapping[str, Any], table: Mapping[str, Any], memory: str | None) -> str | None:
    """The artifact a job of strategy `name` reads: its owner's `memory_by_strategy` entry when given (null: none),
    else `memory`, unless the owner reads its entry only (`memory_entry_only`: then none)."""
    owner = memory_owner(name, options, table)
    if owner in table:
        return table[owner] or None
    try:
        entry_only = declaration(owner).memory_entry_only
    except (UnknownStrategy, ValueError, TypeError, AttributeError):  # an unknown name is refused by the checks
        entry_only = False
    return None if entry_only else memory


def typed_options(name: str, options: Mapping[str, Any]) -> Any:
    """Strategy `name`'s options as its declaration types them (the others' options of a sweep left out)."""
    return declaration(name).parse(name, own_options(name, options))


def validate_options(name: str, options: dict[str, Any], sweep: Iterable[str] = ()) -> None:
    """Unknown names are rejected (naming who takes what), then the values are checked as its declaration types
    them (raise ValueError). The CLI calls this for every job before anything is written (exit 2).
    `sweep`: the strategies of the whole sweep; an option one of them declares is not a typo for the others,
    which never see it (`create` drops options that another strategy declares)."""
    declared = known_options(name)
    if declared is not None:
        others = {o for other in sweep if other != name for o in (known_options(other) or ())}
        options = {k: v for k, v in options.items() if k in declared or k not in others}
        unknown = sorted(set(options) - set(declared))
        if unknown and [s for s in dict.fromkeys(sweep) if s != name]:
            raise ValueError(unknown_options_message(name, unknown, list(sweep)))
    declaration(name).parse(name, options)


def unknown_options_message(name: str, unknown: list[str], sweep: list[str]) -> str:
    """Which strategies of the sweep take options, and the closest valid name: a typo on a sweep of
    none,full,core_retrieval is nobody's option, not `none`'s fault."""
    takers = {s: known_options(s) for s in dict.fromkeys([*sweep, name])}
    valid = sorted({o for opts in takers.values() for o in opts or ()})
    close = difflib.get_close_matches(unknown[0], valid, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    said = [f"{s} takes {sorted(opts)}" for s, opts in takers.items() if opts]
    none = [s for s, opts in takers.items() if opts == ()]
    if none:
        said.append(f"{', '.join(none)} take{'s' if len(none) == 1 else ''} no options")
    return (f"unknown option(s) {unknown}: no strategy of this sweep ({', '.join(takers)}) takes "
            f"{'it' if len(unknown) == 1 else 'them'}; {'; '.join(said)}{hint}")


def uses_memory(name: str) -> bool:
    """False for a strategy that ignores `memory=` (the baseline): its rows carry no provenance label."""
    return declaration(name).uses_memory


def uses_ground_truth(name: str, options: dict[str, Any]) -> bool:
    """Whether this strategy, so configured, learns from labels (reward, success, evaluator report, gold
    solution). The harness withholds them otherwise."""
    return bool(declaration(name).ground_truth(typed_options(name, options)))


def learns_online(name: str, options: dict[str, Any]) -> bool:
    """Whether this strategy, so configured, learns online (read before it is built: `benchmark.orders`, the plan)."""
    return bool(declaration(name).online(typed_options(name, options)))


def check_memory(name: str, path: str | None) -> None:
    """Raises ValueError when this strategy cannot start from the artifact at `path` (None: no memory=), e.g.
    reasoning_bank given a guideline file: the CLI's check, before anything runs."""
    declaration(name).check_memory(path)


def trial_streams(name: str) -> bool:
    """Whether an online learner keeps one independent stream per trial (`benchmark.orders` permutes each)."""
    return declaration(name).trial_streams


def delivered_frame(name: str, options: Mapping[str, Any]) -> Frame | None:
    """The frame strategy `name` delivers so configured (None: it declares none)."""
    return declaration(name).delivered_frame(typed_options(name, options))


def own_options(name: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """The options that reach strategy `name`: another strategy's (one sweep, one options node) never do; a typo
    still does, so its check fails."""
    declared = known_options(name)
    if declared is None:
        return dict(options)
    foreign = {o for other in available() if other != name for o in (_names_of(other) or ())}
    return {k: v for k, v in options.items() if k in declared or k not in foreign}


def _names_of(name: str) -> tuple[str, ...] | None:
    try:
        return known_options(name)
    except Exception:  # a plugin that fails to load declares nothing here; running it says why
        return None


def create(name: str, ctx: StrategyContext) -> Strategy:
    factory = strategy_class(name)
    built = factory.create(replace(ctx, options=own_options(name, ctx.options)))
    if not isinstance(built, Strategy):
        raise TypeError(f"strategy {name!r} does not implement the Strategy protocol (declaration, create, name, "
                        "deliver, learn, for_trial, record_facts, state): inherit strategies.StrategyBase")
    return built
