"""A strategy's options are one frozen dataclass (its declaration's `options`): each field's name, type and
default, and in `option(...)`'s metadata its bounds and the reference its default comes from. `parse` is the one
check every strategy's options go through, before anything is written (exit 2) and again when it is built:
unknown names (with the closest known one), types (Hydra leaves `strategy.options` an untyped dict, so
`top_k=abc` arrives as a string), bounds, then the dataclass's own `__post_init__` for rules across fields.
"""

from __future__ import annotations

import difflib
import types
import typing
from dataclasses import Field, dataclass, field, fields
from typing import Any, Mapping, Optional, Sequence

from strategies.frame import FRAMES

_NAMES = {bool: "a boolean", int: "an integer", float: "a number", str: "a string", dict: "a mapping"}


def option(default: Any, *, min: Optional[float] = None, choices: Sequence[str] = (), means: str = "",
           source: str = "", renamed_from: str = "") -> Any:
    """A field of an options dataclass: `min` (inclusive) and `choices` bound its value, `means` words the
    message of any mistake ("a positive integer or null"), `source` names the reference its default comes from,
    `renamed_from` the option's old name (which is then refused with this one named)."""
    meta = {"min": min, "choices": tuple(choices), "means": means, "source": source, "renamed_from": renamed_from}
    return field(default=default, metadata={k: v for k, v in meta.items() if v not in (None, "", ())})


@dataclass(frozen=True)
class NoOptions:
    """A strategy that takes no options."""


def names(options_type: type) -> tuple[str, ...]:
    """The option names a strategy takes, and the old names it refuses with the new one named."""
    own = [f.name for f in fields(options_type)]
    return (*own, *(f.metadata["renamed_from"] for f in fields(options_type) if "renamed_from" in f.metadata))


def unknown_message(strategy: str, unknown: Sequence[str], known: Sequence[str]) -> str:
    close = difflib.get_close_matches(unknown[0], list(known), n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    said = f"known: {sorted(known)}" if known else "it takes no options"
    return f"strategy {strategy!r}: unknown option(s) {sorted(unknown)}; {said}{hint}"


def parse(strategy: str, options_type: type, given: Mapping[str, Any], gather: str = "") -> Any:
    """The typed options of `strategy` from `given` (a ValueError, one line, for any mistake). `gather`: the field
    that takes every name the dataclass does not declare (placebo passes them on to its reference)."""
    declared = {f.name: f for f in fields(options_type)}
    renamed = {f.metadata["renamed_from"]: f.name for f in declared.values() if "renamed_from" in f.metadata}
    for old in sorted(set(given) & set(renamed)):
        raise ValueError(f"strategy {strategy!r}: option {old} is now {renamed[old]}")
    unknown = sorted(set(given) - set(declared))
    if unknown and not gather:
        raise ValueError(unknown_message(strategy, unknown, sorted(declared)))
    hints = typing.get_type_hints(options_type)
    for name, value in given.items():
        if name in declared:
            _check(strategy, declared[name], hints[name], value)
    own = {k: v for k, v in given.items() if k in declared}
    if gather:
        own[gather] = {k: v for k, v in given.items() if k not in declared}
    try:
        return options_type(**own)
    except ValueError as exc:  # a rule across fields (`__post_init__`)
        said = str(exc)
        raise ValueError(said if said.startswith("strategy ") else f"strategy {strategy!r}: {said}") from None


def _check(strategy: str, f: Field[Any], hint: Any, value: Any) -> None:
    kinds = typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, types.UnionType) else (hint,)
    nullable = type(None) in kinds
    kinds = tuple(typing.get_origin(k) or k for k in kinds if k is not type(None))
    means = f.metadata.get("means")

    def refuse(why: str) -> ValueError:
        if means:
            return ValueError(f"strategy {strategy!r}: option {f.name} must be {means}, got {value!r}")
        return ValueError(f"strategy {strategy!r}: option {f.name}={value!r}{why}")

    if value is None:
        if nullable:
            return
        raise ValueError(f"strategy {strategy!r}: option {f.name} may not be null")
    if kinds and kinds[0] is not Any and not any(_is(value, kind) for kind in kinds):
        kind = " or ".join(_NAMES.get(k, k.__name__) for k in kinds)
        raise refuse(f" must be {kind}{' or null' if nullable else ''}")
    choices = f.metadata.get("choices")
    if choices and value not in choices:
        raise refuse(f"; valid: {', '.join(choices)}")
    low = f.metadata.get("min")
    if low is not None and value < low:
        raise ValueError(f"strategy {strategy!r}: option {f.name} must be {means or f'>= {low}'}, got {value!r}")


def _is(value: Any, kind: type) -> bool:
    if kind is bool:
        return isinstance(value, bool)
    if kind is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, kind)


def budget_field() -> Any:
    """`budget_tokens`: a cap on the delivered block (null: none; memory_kit/budget.py)."""
    return option(None, min=1, means="a positive integer or null")


def frame_field() -> Any:
    """`frame`: own | neutral, the common instruction (strategies/frame.py)."""
    return option("own", choices=FRAMES)


@dataclass(frozen=True)
class BlockOptions:
    """The options of a design that delivers one block: its token cap and its frame."""

    budget_tokens: Optional[int] = budget_field()
    frame: str = frame_field()
