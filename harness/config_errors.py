"""One readable line for a Hydra / OmegaConf composition error (harness.run prints it and exits 2).

Hydra's own messages say "Error merging override benchmark.limit=abc" without the expected type, or follow
the useful line with its config search path. Here the key, the value and what is expected come first, taken
from the schema (harness/config.py), and nothing else.
"""

from __future__ import annotations

import dataclasses
import typing

from hydra.errors import MissingConfigException
from omegaconf.errors import ConfigAttributeError, ConfigKeyError, OmegaConfBaseException

_KINDS = {int: "an integer", float: "a number", bool: "true or false", str: "a string"}


def describe(exc: BaseException) -> str:
    if isinstance(exc, MissingConfigException) and exc.options and exc.missing_cfg_file:
        group, _, choice = str(exc.missing_cfg_file).rpartition("/")
        return f"{group}={choice}: no such choice; available: {', '.join(exc.options)}"
    cause = exc.__cause__
    if isinstance(cause, OmegaConfBaseException) and getattr(cause, "full_key", None):
        if isinstance(cause, (ConfigAttributeError, ConfigKeyError)):
            keys = _schema_keys(cause.object_type)
            return f"{cause.full_key}: no such key" + (f"; valid keys here: {', '.join(keys)}" if keys else "")
        expected = _expected(cause.object_type, cause.key)
        if expected:
            return f"{cause.full_key}={cause.value}: expected {expected}"
        return f"{cause.full_key}={cause.value}: {_first_line(cause)}"
    return "; ".join(line.strip() for line in str(exc).splitlines() if line.strip()) or type(exc).__name__


def _first_line(exc: BaseException) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def _schema_keys(schema: object) -> list[str]:
    return [f.name for f in dataclasses.fields(schema)] if dataclasses.is_dataclass(schema) else []


def _expected(schema: object, key: object) -> str | None:
    """What the schema field `key` of dataclass `schema` takes, in words (None when it cannot tell)."""
    if not dataclasses.is_dataclass(schema):
        return None
    hint = typing.get_type_hints(schema).get(str(key))
    if hint is None:
        return None
    args = typing.get_args(hint)
    nullable = type(None) in args
    if nullable:
        hint = next(a for a in args if a is not type(None))
    origin = typing.get_origin(hint) or hint
    words = _KINDS.get(origin) or {dict: "a mapping, e.g. {key: value}",
                                    list: "a list, e.g. [a,b]"}.get(origin)
    if words is None:
        return None
    return words + (" or null" if nullable else "")


def unparsable(overrides: list[str], exc: BaseException) -> str:
    """Which command-line override Hydra's grammar rejected, and why: the value and what is expected, not the
    grammar's token list."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parser = OverridesParser.create()
    for item in overrides:
        if stray := _stray_comma(item):
            return stray
        try:
            parser.parse_overrides(overrides=[item])
        except Exception as one:
            reason = _first_line(one).split(" expecting {")[0]  # the token set Hydra's parser expected is noise
            return (f"cannot parse {item!r}: {reason} (quote values with brackets, commas or spaces; "
                    "grammar: https://hydra.cc/docs/advanced/override_grammar/basic/)")
    return _first_line(exc)


def _stray_comma(item: str) -> str | None:
    """`strategy=none,` (STRATEGIES=none,): a sweep's comma list with an empty name, said as such."""
    key, eq, value = item.partition("=")
    if not eq or not value or value[0] in "[{'\"" or "," not in value:
        return None
    names = [v.strip() for v in value.split(",")]
    if all(names):
        return None
    kept = ",".join(n for n in names if n)
    return (f"{item}: an empty name in the comma list (a stray comma); expected names separated by single commas"
            + (f", e.g. {key}={kept}" if kept else ""))
