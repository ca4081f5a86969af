"""Model usage by role: who in an episode called a model, and what it spent. The one list of roles.

A row of results.jsonl (harness/row.py) carries `usage`, one mapping role -> {prompt, cached, completion, cost,
calls}: the agent, the user simulator, τ²'s judge, the strategy's own calls during the episode, an online
learner's update after it (`learning`: ACE's Reflector and Curator), and any role a plugin reports through the
ledger (harness/ledger.py `Ledger.add_call(role, usage)`). A role is a name, not a column: the ledger, the
budget and analysis read whatever roles a row has, so a new role is one `add_call` and nothing else.

A figure a provider did not report (cached tokens, an unpriced call's cost) is None: a total over calls where any
lacks it is None rather than a partial sum that would understate it.

Rows of schema 1 spelled usage into column names (`prompt_tokens`, `user_cost_usd`, `judge_calls`,
`strategy_prompt_tokens`, ...); `column(role, key)` is that spelling, used to read them (`from_columns`) and to
give readers that ask by those names (analysis's frames, `Row.get`) the same figures (`to_columns`).
A plain definition (stdlib only): analysis imports it, as it imports harness/row.py.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Optional, Protocol

# The built-in roles, in the order tables show them. A plugin's role needs no entry: it is shown after these.
ROLES = ("agent", "user", "judge", "strategy", "learning")
KEYS = ("prompt", "cached", "completion", "cost", "calls")
Usage = Mapping[str, Any]  # one role's {prompt, cached, completion, cost, calls}; a key not reported is absent
# What a row says of a role that made no call: the agent and the user simulator are always there (with no
# figure to report: cached and cost None), the judge as spending nothing; any other role is absent.
IDLE: Mapping[str, Usage] = {
    "agent": {"prompt": 0, "cached": None, "completion": 0, "cost": None, "calls": 0},
    "user": {"prompt": 0, "cached": None, "completion": 0, "cost": None, "calls": 0},
    "judge": {"prompt": 0, "cached": 0, "completion": 0, "cost": 0.0, "calls": 0},
}
_SUFFIX = {"prompt": "prompt_tokens", "cached": "cached_tokens", "completion": "completion_tokens",
           "cost": "cost_usd", "calls": "calls"}
SUFFIXES = tuple(_SUFFIX.values())  # how a schema-1 usage column ends (`steps` aside)


def column(role: str, key: str) -> str:
    """The schema-1 column of a role's figure: the agent's unprefixed (its calls are `steps`), others prefixed."""
    if role == "agent":
        return "steps" if key == "calls" else _SUFFIX[key]
    return f"{role}_{_SUFFIX[key]}"


def sum_or_none(values: Iterable[Any]) -> Any:
    values = list(values)
    if not values or any(v is None for v in values):
        return None
    return sum(values)


def of_calls(role: str, calls: Iterable[Any]) -> Optional[dict[str, Any]]:
    """One role's usage from its calls (objects with prompt_tokens, completion_tokens, cached_tokens, cost_usd);
    IDLE's entry, or None, when it made none."""
    calls = list(calls)
    if not calls:
        return dict(IDLE[role]) if role in IDLE else None
    cached = {"cached": sum_or_none(c.cached_tokens for c in calls)} \
        if all(hasattr(c, "cached_tokens") for c in calls) else {}  # a strategy's ModelCall reports none
    return {"prompt": sum(c.prompt_tokens for c in calls), **cached,
            "completion": sum(c.completion_tokens for c in calls),
            "cost": sum_or_none(c.cost_usd for c in calls), "calls": len(calls)}


def combined(*parts: Usage) -> dict[str, Any]:
    """Several usages of one role as one (counts summed, a figure None when any part lacks it)."""
    keys = [k for k in KEYS if any(k in p for p in parts)]
    return {k: sum_or_none(p.get(k) for p in parts) for k in keys}


def ordered(roles: Iterable[str]) -> list[str]:
    """Roles in table order: the built-in ones first, then the others as first seen."""
    seen = list(dict.fromkeys(roles))
    return [r for r in ROLES if r in seen] + [r for r in seen if r not in ROLES]


class HasUsage(Protocol):
    """A Row (harness/row.py), seen from here without importing it."""

    @property
    def usage(self) -> Mapping[str, Usage]: ...


def of_record(record: HasUsage | Mapping[str, Any]) -> Mapping[str, Usage]:
    """The usage of a Row, or of a line as decoded (schema 2's `usage`, or read from schema 1's columns)."""
    if not isinstance(record, Mapping):
        return record.usage
    return record["usage"] if "usage" in record else from_columns(record)[0]


def cost(usage: Mapping[str, Usage]) -> Optional[float]:
    """USD of an episode over its roles; None when a role that did work (calls, or tokens where a schema-1 row
    does not count its calls) is unpriced. A role that did nothing costs nothing."""
    total = 0.0
    for figures in usage.values():
        value = figures.get("cost")
        if value is None:
            worked = figures.get("calls") if "calls" in figures else figures.get("prompt")
            if worked:
                return None
            continue
        total += float(value)
    return total


def priced(usage: Mapping[str, Usage]) -> bool:
    """Whether a role that did work has a price (a judge that made no call is recorded as $0.0, not priced)."""
    return any(f.get("cost") is not None and (f.get("calls") if "calls" in f else f.get("prompt"))
               for f in usage.values())


def to_columns(usage: Mapping[str, Usage]) -> dict[str, Any]:
    """The schema-1 columns of a usage mapping, as readers that ask by column name see it."""
    return {column(role, key): value for role, figures in usage.items() for key, value in figures.items()}


def from_columns(data: Mapping[str, Any], roles: Iterable[str] = ROLES) -> tuple[dict[str, dict[str, Any]], dict]:
    """(usage, the other keys) of a schema-1 row's columns: each role's prefixed columns read into its mapping."""
    names = {column(role, key): (role, key) for role in roles for key in KEYS}
    usage: dict[str, dict[str, Any]] = {}
    rest = {}
    for name, value in data.items():
        if name in names:
            role, key = names[name]
            usage.setdefault(role, {})[key] = value
        else:
            rest[name] = value
    return {role: usage[role] for role in ordered(usage)}, rest
