"""What a row of results.jsonl is: one episode, typed. The one definition of the schema version, of every field
name and of their order on disk, and the one reader of the file.

A row is built by one function, harness/records.py `build_row`, and never edited; only the store writes it
(`to_json`) and reads it back (`read_rows`), and so do the budget, the infra-balance line, the online replay and
analysis's loader, through the store or this reader. The table in docs/running.md lists every field
(tests/test_row.py checks both ways).

A frozen stdlib dataclass, not a pydantic model: analysis imports this module (plain definitions only, like
harness/assembly/options.py) without loading the harness or a validation library, and every writer is our own
code, so a row needs a declared shape, not input validation. A field a row does not have (a failed episode has
no token columns; rows written before a field existed) is `UNSET` and is not written, which is not the same as
`null` (`cost_usd: null`: the provider did not price the call).

Schema 2 (issue 34): what models spent is one mapping, `usage`, role -> {prompt, cached, completion, cost, calls}
(harness/usage.py, the one list of roles), and columns a plugin benchmark, strategy or online learner adds that are
not declared here are written under their owner's key, `benchmark_extra`, `strategy_extra`, `learner_extra`: a
schema-2 line has no undeclared key. Lines of schema 1 (usage spelled into column names, an extra column's owner
told by its place in the line) are read by `_from_schema_1`, so run directories written before load unchanged.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Callable, Hashable, Iterable, Mapping, Optional, TypeVar, Union, cast

import harness.usage as by_role

SCHEMA_VERSION = 2  # 2: usage by role, extras under their owner; 1 still read (_from_schema_1)
RESULTS = "results.jsonl"  # the run directory's file of rows, one JSON object per line


class _Unset:
    """A field the row does not have (not written), as opposed to one written as null."""

    _instance: Optional["_Unset"] = None

    def __new__(cls) -> "_Unset":
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __reduce__(self) -> str:  # one instance in every process (rows travel from Ray workers by pickle)
        return "UNSET"

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "UNSET"


UNSET = _Unset()
T = TypeVar("T")
Maybe = Union[T, _Unset]  # a declared field a given row may not have
R = TypeVar("R", bound="RowLike")


@dataclass(frozen=True, kw_only=True)
class Row:
    """One episode of a job, in results.jsonl order. The meaning of each field: docs/running.md."""

    # the job's (harness/runner/job.py)
    schema: Maybe[int] = UNSET
    run: Maybe[Optional[str]] = UNSET
    job: Maybe[str] = UNSET
    benchmark: Maybe[str] = UNSET
    split: Maybe[str] = UNSET
    model: Maybe[str] = UNSET
    user_model: Maybe[str] = UNSET
    strategy: Maybe[str] = UNSET
    memory: Maybe[Optional[str]] = UNSET
    strategy_variant: Maybe[str] = UNSET  # only a job whose strategy config sets `variant`
    memory_instruction: Maybe[str] = UNSET  # a framed design's (or control arm's) instruction (strategies/frame.py)
    memory_provenance: Maybe[Optional[str]] = UNSET
    placement: Maybe[str] = UNSET
    context_policy: Maybe[str] = UNSET
    answer_mode: Maybe[str] = UNSET
    trial: Maybe[int] = UNSET
    order: Maybe[int] = UNSET  # only a job that runs several task orders (benchmark.orders)
    seed: Maybe[Optional[int]] = UNSET
    # the episode's, as its benchmark reports it (harness/records.py EpisodeRecord)
    task_id: str
    success: bool
    reward: Maybe[float] = UNSET
    termination: Maybe[str] = UNSET
    error: Maybe[Optional[str]] = UNSET
    error_detail: Maybe[Optional[str]] = UNSET
    # the token ledger's (harness/ledger.py Ledger.record_fields): usage by role (harness/usage.py)
    usage: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    cache_write_tokens: Maybe[Optional[int]] = UNSET  # the agent's prompt-cache writes (Anthropic)
    memory_tokens: Maybe[int] = UNSET
    model_seconds: Maybe[Optional[float]] = UNSET
    answer_calls: Maybe[int] = UNSET
    summarised_turns: Maybe[int] = UNSET
    delivered: Maybe[list] = UNSET
    dropped: Maybe[list] = UNSET
    step_usage: Maybe[list] = UNSET
    memory_tool_calls: Maybe[int] = UNSET  # only when the strategy offered a memory tool (docs/memory-tools.md)
    memory_tool_errors: Maybe[int] = UNSET
    memory_tool_ids: Maybe[list] = UNSET
    wall_s: Maybe[Optional[float]] = UNSET
    task_text: Maybe[str] = UNSET
    # a benchmark's own columns: τ² (harness/benchmarks/tau2/adapter.py), AppWorld (appworld/adapter.py)
    task_set: Maybe[Optional[dict]] = UNSET
    agent: Maybe[str] = UNSET
    judge_model: Maybe[Optional[str]] = UNSET
    pass_count: Maybe[int] = UNSET
    num_tests: Maybe[int] = UNSET
    difficulty: Maybe[Any] = UNSET
    scenario_id: Maybe[str] = UNSET
    scenario_tasks: Maybe[int] = UNSET
    benchmark_extra: Mapping[str, Any] = field(default_factory=dict)  # a plugin benchmark's columns
    # the provider's retries of this episode's calls (the ledger's; null in an imported row)
    provider_retries: Maybe[Optional[int]] = UNSET
    provider_recovered: Maybe[Optional[int]] = UNSET
    provider_gave_up: Maybe[Optional[int]] = UNSET
    # a strategy's own facts (Strategy.record_facts: ace, ace_online, ace_retrieval, the online designs)
    memory_ground_truth: Maybe[Optional[bool]] = UNSET
    cited_steps: Maybe[int] = UNSET
    episodes_seen: Maybe[int] = UNSET
    memory_size: Maybe[int] = UNSET
    learner_start: Maybe[str] = UNSET  # an online design's: `empty` or `train artifact` (strategies/base.py)
    control_arm: Maybe[str] = UNSET  # `placebo:<reference>` or `protocol_only:<reference>` (docs/controls.md)
    strategy_extra: Mapping[str, Any] = field(default_factory=dict)  # a plugin strategy's facts
    # where the row came from and when
    reflection_rerun: Maybe[int] = UNSET  # retries.jsonl only: an online learner's re-run of the episode
    imported_from: Maybe[dict] = UNSET  # a cell made by `make import-tau2`
    trajectory: Maybe[Optional[str]] = UNSET
    started_at: Maybe[Optional[str]] = UNSET
    attempt: Maybe[int] = UNSET  # 2, 3, ...: an infra episode run again on resume; absent = 1
    model_server: Maybe[str] = UNSET  # a model served by the managed llama.cpp server
    # an online learner's facts about its update (Strategy.learn)
    update_lost: Maybe[bool] = UNSET
    learner_extra: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for bucket in EXTRAS:
            clash = set(getattr(self, bucket)) & FIELD_SET
            if clash:  # a plugin's column must not silently replace a declared one
                raise ValueError(f"Row.{bucket} repeats declared field(s) {sorted(clash)}")

    # -- on disk ---------------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The row's keys in results.jsonl order (schema 2): the declared fields it has, `usage` by role, and each
        owner's extra columns under its own key, so that whose a column is never depends on where it stands."""
        out: dict[str, Any] = {}
        for name in ORDER:
            value = getattr(self, name)
            if name in MAPPINGS:
                if value:
                    out[name] = {k: dict(v) for k, v in value.items()} if name == "usage" else dict(value)
            elif value is not UNSET:
                out[name] = value
        return out

    def columns(self) -> dict[str, Any]:
        """The row flat, as a reader asks it by column name (analysis's frames): usage spelled as schema 1's
        columns (harness/usage.py `to_columns`), each owner's extra columns at its place."""
        out: dict[str, Any] = {}
        for name in ORDER:
            value = getattr(self, name)
            if name == "usage":
                out.update(by_role.to_columns(value))
            elif name in EXTRAS:
                out.update(value)
            elif value is not UNSET:
                out[name] = value
        return out

    def to_json(self, scrub: Callable[[dict[str, Any]], dict[str, Any]] | None = None) -> str:
        """One line of results.jsonl (no newline); `scrub` (the store's redaction) sees the dict first."""
        data = self.to_dict()
        return json.dumps(scrub(data) if scrub else data, ensure_ascii=False, allow_nan=False)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Row":
        """A row from its JSON object. Schema 2 declares every key; an older row (schema 1, or a hand-made one
        without `schema`) is read by schema 1's rules (`_from_schema_1`)."""
        if not isinstance(data, Mapping) or "task_id" not in data or "success" not in data:
            raise ValueError("not a record (needs task_id and success)")
        schema = data.get("schema")
        if not isinstance(schema, int) or schema < 2:
            return _from_schema_1(data)
        undeclared = sorted(set(data) - FIELD_SET)
        if undeclared:
            raise ValueError(f"undeclared key(s) {undeclared} in a schema {schema} row")
        return cls(**data)

    @classmethod
    def of(cls, *parts: tuple[Mapping[str, Any], str]) -> "Row":
        """A row from its parts, each (columns, the extra bucket of its owner): declared names set their field
        (a later part wins), the rest join the owner's bucket."""
        known: dict[str, Any] = {}
        extra: dict[str, dict[str, Any]] = {}
        for columns, bucket in parts:
            for key, value in columns.items():
                if key in COLUMNS:
                    known[key] = value
                else:
                    extra.setdefault(bucket, {})[key] = value
        buckets: dict[str, Any] = dict(extra)
        return cls(**known, **buckets)

    @classmethod
    def from_json(cls, line: str) -> "Row":
        return cls.from_dict(json.loads(line))

    # -- what readers ask (by name, as of the dict a line decodes to) -------------------------------------
    def __getitem__(self, name: str) -> Any:
        value = self.get(name, UNSET)
        if value is UNSET:
            raise KeyError(name)
        return value

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.get(name, UNSET) is not UNSET

    def get(self, name: str, default: object = None) -> Any:
        """A field, a role's figure by its schema-1 column (`user_cost_usd`), or an extra column by name,
        `default` when the row does not have it (as dict.get)."""
        if name in COLUMNS:
            value = getattr(self, name)
            return default if value is UNSET else value
        if name in USAGE_COLUMNS or name.endswith(by_role.SUFFIXES):  # a role's figure by its schema-1 column
            spelled = by_role.to_columns(self.usage)
            if name in spelled:
                return spelled[name]
        for bucket in EXTRAS:
            if name in getattr(self, bucket):
                return getattr(self, bucket)[name]
        return default

    @property
    def episode(self) -> tuple[str, int]:
        """(task_id, trial): the episode this row records (a row without a trial is trial 0)."""
        return str(self.task_id), int(self.get("trial", 0))

    @property
    def attempt_number(self) -> int:
        """1 for a first record (and for rows written before `attempt` existed)."""
        return int(self.get("attempt", 1))


EXTRAS = ("benchmark_extra", "strategy_extra", "learner_extra")
MAPPINGS = ("usage", *EXTRAS)  # written as a JSON object, and only when not empty
# a stored row as a reader asks it (by name): a Row, or the dict one line of results.jsonl decodes to
RowLike = Union[Row, Mapping[str, Any]]
ORDER = tuple(f.name for f in fields(Row))
FIELD_SET = frozenset(ORDER)
FIELD_NAMES = tuple(name for name in ORDER if name not in EXTRAS)  # every declared key, in order
COLUMNS = frozenset(FIELD_NAMES)
USAGE_COLUMNS = frozenset(by_role.column(role, key) for role in by_role.ROLES for key in by_role.KEYS)


def _from_schema_1(data: Mapping[str, Any]) -> Row:
    """The reader of schema 1, kept for run directories written before schema 2: usage read from its columns
    (`user_cost_usd` ...), and an undeclared key given to the owner whose section of the line it stands in (its
    extra bucket came after its owner's declared fields). Schema 2 writes the owner instead."""
    roles, data = by_role.from_columns(data)
    known: dict[str, Any] = {"usage": roles} if roles else {}
    extra: dict[str, dict[str, Any]] = {bucket: {} for bucket in EXTRAS}
    owner = EXTRAS[0]
    for key, value in data.items():
        if key in COLUMNS:
            known[key] = value
            owner = _OWNER_AFTER[key]
        elif key in EXTRAS and isinstance(value, Mapping):
            extra[key].update(value)
        else:
            extra[owner][key] = value
    buckets: dict[str, Any] = {bucket: cols for bucket, cols in extra.items() if cols}
    return Row(**known, **buckets)


def _owners() -> dict[str, str]:
    """Declared field -> the extra bucket an undeclared key right after it belongs to, in a schema-1 line."""
    owners, current = {}, EXTRAS[0]
    for name in ORDER:
        if name in EXTRAS:
            current = EXTRAS[min(EXTRAS.index(name) + 1, len(EXTRAS) - 1)]
        owners[name] = current
    return owners


_OWNER_AFTER = _owners()


# -- the one reader ------------------------------------------------------------------------------------------
class RowError(ValueError):
    """A line of results.jsonl that is not a row, with its file:line."""


Bad = Callable[[int, str, bool], None]  # (line number, reason, torn: the unterminated last line)


def parse_rows(data: bytes, source: str, bad: Bad | None = None) -> list[tuple[int, Row]]:
    """(line number, Row) for every line of a results.jsonl's bytes. A bad line goes to `bad`; without one, a
    torn last line (no newline: a write cut off by a kill) is skipped and any other bad line raises RowError."""
    lines = data.decode("utf-8").split("\n")
    out = []
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        torn = lineno == len(lines)  # the text after the last newline
        try:
            out.append((lineno, Row.from_json(line)))
        except (json.JSONDecodeError, ValueError, TypeError) as exc:
            reason = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
            if bad is not None:
                bad(lineno, reason, torn)
            elif not torn:
                raise RowError(f"{source}:{lineno}: corrupt record ({reason})") from None
    return out


def read_rows(path: str | Path, bad: Bad | None = None) -> list[tuple[int, Row]]:
    """Every row of a results.jsonl file, read once (see parse_rows); none when the file does not exist."""
    path = Path(path)
    return parse_rows(path.read_bytes(), str(path), bad) if path.is_file() else []


def latest_attempts(rows: Iterable[R], key: Callable[[R], Hashable]) -> tuple[dict[Hashable, int], dict[str, int]]:
    """THE latest-attempt rule, for a Row or a decoded line alike: per `key` (an episode), the index of the row that
    counts: the highest `attempt` (absent = 1), and of equal attempts the later line; with how many were dropped
    as `superseded` (an earlier attempt) or `duplicates` (the same attempt). Keys in order of first appearance."""
    rows = list(rows)
    kept: dict[Hashable, int] = {}
    dropped = {"superseded": 0, "duplicates": 0}
    for i, row in enumerate(rows):
        k = key(row)
        j = kept.get(k)
        if j is None:
            kept[k] = i
            continue
        new, old = int(row.get("attempt", 1)), int(rows[j].get("attempt", 1))
        dropped["duplicates" if new == old else "superseded"] += 1
        if new >= old:
            kept[k] = i
    return kept, dropped


def latest_per_episode(rows: Iterable[Row]) -> tuple[dict[tuple[str, int], Row], dict[str, int]]:
    """The row that counts for each (task_id, trial) of one job's rows, by `latest_attempts`."""
    rows = list(rows)
    kept, dropped = latest_attempts(rows, lambda row: row.episode)
    return {cast(tuple[str, int], k): rows[i] for k, i in kept.items()}, dropped
