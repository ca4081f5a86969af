"""The episode list: every record of the given runs as one small frame, filtered, sorted and paged server-side.

Records are read by `analysis.runs.load.load_records` (overlap="keep": the viewer shows every run as it is), so the
model, strategy and assembly labels are the ones `make report` groups by and its links can name. A record is
read defensively: a missing field is a blank cell, never an error.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from analysis.runs.load import load_records
from analysis.views.pulls import CALLS, IDS, pull_rate

# filter name in the URL -> column; each takes one or more exact values (`?strategy=none&strategy=full`)
CHOICES = {"run": "run", "benchmark": "benchmark", "split": "split", "model": "model", "strategy": "strategy",
           "assembly": "assembly", "task": "task_id", "trial": "trial", "success": "success", "error": "error"}
# numeric filters: `?tokens_min=1000&cost_max=0.5`
RANGES = {"tokens": "tokens", "memory_tokens": "memory_tokens", "cost": "cost_usd"}
SORTS = ("run", "benchmark", "model", "strategy", "assembly", "task_id", "trial", "success", "error", "steps",
         "tokens", "memory_tokens", "cost_usd", "reward")
NO_ERROR = "none"  # the error filter's value for episodes without an error label
PER_PAGE = 50
MAX_PER_PAGE = 500
_COLUMNS = ("run", "run_dir", "job", "benchmark", "split", "model", "strategy", "assembly", "task_id", "trial",
            "success", "reward", "error", "error_detail", "steps", "prompt_tokens", "completion_tokens",
            "memory_tokens", "cost_usd", "trajectory", "termination", "source", CALLS, IDS)


class BadQuery(ValueError):
    """A filter or sort the list does not know, or a number that is not one: shown to the user, HTTP 400."""


@dataclass
class Page:
    rows: list[dict]
    matched: int
    successes: int
    page: int
    pages: int
    per_page: int
    facets: dict[str, list[tuple[str, int]]] = field(default_factory=dict)
    pulls: list[str] = field(default_factory=list)  # per strategy that offered a memory tool: its pull rate


def _text(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _task_key(values: pd.Series) -> pd.Series:
    """Task ids sort numerically where they are numbers ('9' before '12'), as text otherwise."""
    return values.map(lambda v: (0, int(v), "") if str(v).isdigit() else (1, 0, str(v)))


class EpisodeIndex:
    """The records of `runs` with a stable integer id each (its row), plus the full record for the episode page."""

    def __init__(self, runs: list[str | Path]):
        self.runs = [Path(r) for r in runs]
        self.warnings: list[str] = []
        records = load_records(self.runs, warn=self.warnings.append, overlap="keep")
        if records.empty:
            raise ValueError(f"no records found under {', '.join(map(str, self.runs))}")
        self.records = records.reset_index(drop=True)
        self.frame = self._frame(self.records)
        # each choice column as the text its menu shows, computed once: filters and counts compare these
        self.text = {column: self.frame[column].map(_text) for column in CHOICES.values()}
        self.text["error"] = self.text["error"].replace("", NO_ERROR)

    @staticmethod
    def _frame(records: pd.DataFrame) -> pd.DataFrame:
        df = pd.DataFrame(index=records.index)
        for col in _COLUMNS:
            df[col] = records.get(col)
        df["run"] = records["run_dir"].map(lambda p: Path(p).name)
        numbers = {c: pd.to_numeric(df[c], errors="coerce") for c in ("prompt_tokens", "completion_tokens",
                                                                       "memory_tokens", "cost_usd", "steps",
                                                                       "reward", "trial")}
        df = df.assign(**numbers)
        df["tokens"] = df["prompt_tokens"] + df["completion_tokens"]
        df["success"] = df["success"].astype(bool)
        for col in ("error", "assembly", "termination"):  # a label a record lacks: None, never a float NaN
            df[col] = df[col].astype(object).where(df[col].notna(), None)
        df["trial"] = df["trial"].fillna(0).astype(int)
        df["task_id"] = df["task_id"].map(_text)
        df["id"] = df.index
        return df

    def record(self, episode_id: int) -> dict | None:
        if not 0 <= episode_id < len(self.records):
            return None
        row = self.records.iloc[episode_id].to_dict()
        return {k: v for k, v in row.items() if not (isinstance(v, float) and math.isnan(v))}

    def filtered(self, query: Mapping[str, list[str]]) -> pd.DataFrame:
        """The rows that match every filter in `query` (URL parameter -> its values)."""
        df = self.frame
        mask = pd.Series(True, index=df.index)
        for name, column in CHOICES.items():
            wanted = [v for v in query.get(name, []) if v != ""]
            if wanted:
                mask &= self._choice(df[column], self.text[column], column, wanted)
        for name, column in RANGES.items():
            for bound, compare in (("min", df[column].ge), ("max", df[column].le)):
                raw = (query.get(f"{name}_{bound}") or [""])[0]
                if raw != "":
                    try:
                        mask &= compare(float(raw))
                    except ValueError:
                        raise BadQuery(f"{name}_{bound}={raw!r} is not a number") from None
        unknown = sorted(set(query) - set(CHOICES) - {f"{r}_{b}" for r in RANGES for b in ("min", "max")}
                         - {"sort", "desc", "page", "per_page"})
        if unknown:
            raise BadQuery(f"unknown filter(s) {', '.join(unknown)}; known: {', '.join([*CHOICES, *RANGES])}")
        return df[mask]

    @staticmethod
    def _choice(values: pd.Series, text: pd.Series, column: str, wanted: list[str]) -> pd.Series:
        if column == "success":
            flags = {w.lower() in ("1", "true", "yes") for w in wanted}
            return values.isin(flags)
        return text.isin(wanted)  # the error filter's "none" is the text of "no error label"

    def page(self, query: Mapping[str, list[str]]) -> Page:
        df = self.filtered(query)
        sort = (query.get("sort") or ["id"])[0] or "id"
        if sort not in (*SORTS, "id"):
            raise BadQuery(f"cannot sort by {sort!r}; sortable: {', '.join(SORTS)}")
        descending = (query.get("desc") or ["0"])[0] in ("1", "true")
        key = _task_key if sort == "task_id" else (lambda s: s.map(_text) if s.dtype == object else s)
        df = df.sort_values([sort, "id"] if sort != "id" else "id", ascending=not descending, kind="stable",
                            key=lambda s: key(s) if s.name == sort else s, na_position="last")
        per_page = self._int(query, "per_page", PER_PAGE, 1, MAX_PER_PAGE)
        pages = max(1, math.ceil(len(df) / per_page))
        page = self._int(query, "page", 1, 1, pages)
        shown = df.iloc[(page - 1) * per_page: page * per_page]
        return Page(rows=shown.to_dict("records"), matched=len(df), successes=int(df["success"].sum()),
                    page=page, pages=pages, per_page=per_page, facets=self.facets(df), pulls=self.pulls(df))

    @staticmethod
    def pulls(matched: pd.DataFrame) -> list[str]:
        """The matched episodes' pull rate, per strategy whose rows say it offered a memory tool."""
        offered = matched[matched[CALLS].notna()]["strategy"].map(_text).unique()
        return [pull_rate(matched[matched["strategy"].map(_text) == s]).line(s) for s in sorted(offered)]

    @staticmethod
    def _int(query, name, default, low, high) -> int:
        raw = (query.get(name) or [""])[0]
        if raw == "":
            return default
        try:
            return min(max(int(raw), low), high)
        except ValueError:
            raise BadQuery(f"{name}={raw!r} is not a whole number") from None

    def facets(self, matched: pd.DataFrame) -> dict[str, list[tuple[str, int]]]:
        """Per choice filter: every value of the whole index with how many of the MATCHED rows have it."""
        out = {}
        for name, column in CHOICES.items():
            if name in ("task", "trial"):
                continue  # too many values for a menu; typed instead
            every = self.text[column]
            counts = every.loc[matched.index].value_counts()
            out[name] = [(v, int(counts.get(v, 0))) for v in sorted(every.unique())]
        return out

    def same_episode(self, episode_id: int) -> pd.DataFrame:
        """Other cells' records of the same benchmark, split, task and trial: what the compare page can pair."""
        row = self.frame.loc[episode_id]
        df = self.frame
        same = (self.text["benchmark"] == _text(row["benchmark"])) & (self.text["split"] == _text(row["split"])) \
            & (df["task_id"] == row["task_id"]) & (df["trial"] == row["trial"]) & (df["id"] != episode_id)
        return df[same]
