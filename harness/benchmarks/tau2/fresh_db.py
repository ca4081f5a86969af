"""Fresh τ² databases without reading db.json again: validated once per process, copied record by record.

tau2 builds every environment from its db.json (JSON parse and pydantic validation of the whole database:
~0.17 s for retail, ~0.8 s for airline), and an episode needs three: its own and the evaluator's two (the
episode's calls and the gold calls replayed on fresh ones); its DB hash dumps the whole database twice per
evaluation. In the simulated world's sweep the two were over 80% of all CPU. Here each (DB class, file) is
loaded once per process into a pristine copy that is never handed out; a fresh database holds the pristine
records, and a record is copied the first time anyone reaches it through its table
(`orders[id]`, `.get`, `.items()`, `.values()`...), before it can be changed. What only reads the whole table
at C level (pydantic's model_dump, hence tau2's DB hash; `==`) sees the pristine record where nothing touched it,
equal to a fresh load's (tests/test_tau2_fresh_db.py compares hashes and rewards with tau2's own path), and
the hash (fast_hash) writes those untouched records from JSON kept per record.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import threading
from collections.abc import ItemsView, Iterable, ValuesView
from pathlib import Path
from typing import Any, TypeVar, cast

from pydantic import BaseModel
from tau2.environment.toolkit import ToolKitBase

DB = TypeVar("DB", bound=BaseModel)
_ATOMS = (str, int, float, bool, type(None), bytes)
_LEAVES = frozenset(_ATOMS)  # exact types, checked inline: most fields of a record are one of these
_set = object.__setattr__
_pristine: dict[tuple[type, str, int, int], BaseModel] = {}
_lock = threading.Lock()
_record_json: dict[int, str] = {}  # id(pristine record) -> its JSON as tau2's hash writes it
# False: every database is read from its file, as tau2 does (bench/scale.py times both ways side by side)
enabled = True


def fresh(db_class: type[DB], path: Path | str) -> DB:
    """A database equal to `db_class.load(path)`, sharing nothing that can change with any other."""
    if not enabled:
        return db_class.load(str(path))  # type: ignore[attr-defined]  # tau2's DB classes define load()
    # the path as given (resolving it at every call cost more than the copy), and the file's size and mtime: a
    # db.json rewritten in place (a data dir rebuilt in a long-lived process) is read again, never served stale
    stat = os.stat(path)
    key = (db_class, str(path), stat.st_mtime_ns, stat.st_size)
    with _lock:
        if key not in _pristine:
            _pristine[key] = db_class.load(str(path))  # type: ignore[attr-defined]  # as above
        pristine = _pristine[key]
    return _model_copy(pristine, tables=True)


def fast_hash(tools: ToolKitBase) -> None:
    """`tools.get_db_hash()` (tau2's sha256 of json.dumps(db.model_dump(), sort_keys=True, default=str)) from
    each record's JSON, cached for the records nothing reached: the same string, built from parts. After tau2
    replaced the database (update_db validates a new one) or for a class that serialises in its own way,
    tau2's own method runs."""
    tau2_hash = tools.get_db_hash

    def get_db_hash() -> str:
        return db_hash(tools.db) or tau2_hash()

    tools.get_db_hash = get_db_hash


def db_hash(db: BaseModel) -> str | None:
    tables = {k: v for k, v in db.__dict__.items() if isinstance(v, Table)}
    decorators = type(db).__pydantic_decorators__
    if not tables or decorators.model_serializers or decorators.field_serializers:
        return None
    rest = db.model_dump(exclude=set(tables))
    text = _joined((key, _table_json(tables[key]) if key in tables else _json(rest[key]))
                   for key in sorted([*rest, *tables]))
    return hashlib.sha256(text.encode()).hexdigest()


def _table_json(table: "Table") -> str:
    parts = []
    for key in sorted(dict.keys(table)):
        record = dict.__getitem__(table, key)
        if key in table._own:
            parts.append((key, _json(record.model_dump())))
            continue
        text = _record_json.get(id(record))  # a pristine record: never changed, kept alive by _pristine
        if text is None:
            text = _record_json[id(record)] = _json(record.model_dump())
        parts.append((key, text))
    return _joined(parts)


def _json(value: object) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _joined(parts: Iterable[tuple[str, str]]) -> str:
    """A JSON object from (key, value's JSON) pairs, written as json.dumps writes one."""
    return "{" + ", ".join(f"{json.dumps(key)}: {text}" for key, text in parts) + "}"


def deep_copy(value: object) -> Any:
    """copy.deepcopy for pydantic models, dicts and lists of immutable leaves, several times faster (no memo: a
    database is a tree); anything else goes to copy.deepcopy."""
    kind = type(value)
    if kind in _LEAVES or isinstance(value, _ATOMS):
        return value
    if kind is dict:
        return {k: v if type(v) in _LEAVES else deep_copy(v) for k, v in cast(dict, value).items()}
    if kind is list:
        return [v if type(v) in _LEAVES else deep_copy(v) for v in cast(list, value)]
    if isinstance(value, BaseModel):
        return _model_copy(value, tables=False)
    return copy.deepcopy(value)


def _model_copy(model: BaseModel, tables: bool) -> Any:
    """A copy of `model` as pydantic's own model_copy(deep=True) makes it (fields, fields set, extra, private);
    tables=True: fields holding {id: model} become copy-on-access tables instead of being copied now."""
    new = object.__new__(type(model))
    if tables:
        fields = {k: Table(v) if _is_table(v) else deep_copy(v) for k, v in model.__dict__.items()}
    else:
        fields = {k: v if type(v) in _LEAVES else deep_copy(v) for k, v in model.__dict__.items()}
    _set(new, "__dict__", fields)
    _set(new, "__pydantic_fields_set__", set(model.__pydantic_fields_set__))
    extra, private = model.__pydantic_extra__, model.__pydantic_private__
    _set(new, "__pydantic_extra__", None if extra is None else deep_copy(extra))
    _set(new, "__pydantic_private__", None if private is None else deep_copy(private))
    return new


def _is_table(value: object) -> bool:
    return type(value) is dict and all(isinstance(v, BaseModel) for v in value.values())


class Table(dict):
    """{record id: model}, holding the pristine records until first reached; every way of reaching a value
    from Python copies it first. Overriding __iter__ makes dict(t), {**t} and t.update go through keys() and
    __getitem__ (CPython's fast path is for dicts that keep dict's own iterator)."""

    __slots__ = ("_own",)

    def __init__(self, pristine: dict[str, BaseModel]):
        super().__init__(pristine)
        self._own: set[Any] = set()

    def _owned(self, key: Any) -> Any:
        value = dict.__getitem__(self, key)
        if key not in self._own:
            value = deep_copy(value)
            dict.__setitem__(self, key, value)
            self._own.add(key)
        return value

    def _own_all(self) -> None:
        for key in list(dict.keys(self)):
            self._owned(key)

    def __getitem__(self, key: Any) -> Any:
        return self._owned(key)

    def get(self, key: Any, default: Any = None) -> Any:
        return self._owned(key) if dict.__contains__(self, key) else default

    def __setitem__(self, key: Any, value: Any) -> None:
        dict.__setitem__(self, key, value)
        self._own.add(key)

    def __delitem__(self, key: Any) -> None:
        dict.__delitem__(self, key)
        self._own.discard(key)

    def __iter__(self):
        return dict.__iter__(self)

    # lazy: a search that stops at its match copies what it has looked at (dict_values cannot be made in Python)
    def values(self) -> ValuesView:  # type: ignore[override]  # a ValuesView, not dict_values
        return ValuesView(self)

    def items(self) -> ItemsView:  # type: ignore[override]  # as values()
        return ItemsView(self)

    def pop(self, key: Any, *default: Any) -> Any:
        if dict.__contains__(self, key):
            self._owned(key)
            self._own.discard(key)
        return dict.pop(self, key, *default)

    def popitem(self) -> tuple[Any, Any]:
        self._own_all()
        key, value = dict.popitem(self)
        self._own.discard(key)
        return key, value

    def setdefault(self, key: Any, default: Any = None) -> Any:
        if dict.__contains__(self, key):
            return self._owned(key)
        self[key] = default
        return default

    def update(self, *args: Any, **kwargs: Any) -> None:
        for key, value in dict(*args, **kwargs).items():
            self[key] = value

    def copy(self) -> dict[Any, Any]:
        self._own_all()
        return dict(dict.items(self))

    def __or__(self, other: Any) -> dict[Any, Any]:
        return self.copy() | other

    def __ior__(self, other: Any) -> "Table":
        self.update(other)
        return self

    def __reduce__(self) -> tuple[Any, ...]:  # pickle / copy.deepcopy: a plain dict of owned records
        return dict, (self.copy(),)
