"""Option checks a strategy runs at config-check time (`validate_options`), before anything is written.

`check_types` compares each given value with the type of a dataclass field's default (int, float, bool,
str; a field whose annotation mentions None also takes null). Hydra leaves `strategy.options` untyped
(a free dict), so `top_k=abc` arrives as a string and would only fail mid-run without this.
"""

from __future__ import annotations

from dataclasses import MISSING, fields
from typing import Any

_NAMES = {bool: "a boolean", int: "an integer", float: "a number", str: "a string"}


def check_types(strategy: str, cls: type, options: dict[str, Any]) -> None:
    for f in fields(cls):
        if f.name not in options:
            continue
        value = options[f.name]
        nullable = "None" in str(f.type)
        if value is None:
            if nullable:
                continue
            raise ValueError(f"strategy {strategy!r}: option {f.name} may not be null")
        default = f.default if f.default is not MISSING else None
        kind = type(default) if default is not None else _annotated_kind(str(f.type))
        if kind is None:
            continue
        ok = (isinstance(value, bool) if kind is bool else
              isinstance(value, (int, float)) and not isinstance(value, bool) if kind is float else
              isinstance(value, int) and not isinstance(value, bool) if kind is int else
              isinstance(value, kind))
        if not ok:
            null = " or null" if nullable else ""
            raise ValueError(f"strategy {strategy!r}: option {f.name}={value!r} "
                             f"must be {_NAMES.get(kind, kind.__name__)}{null}")


def _annotated_kind(annotation: str) -> type | None:
    for name, kind in (("bool", bool), ("int", int), ("float", float), ("str", str)):
        if annotation.split("|")[0].strip() == name:
            return kind
    return None
