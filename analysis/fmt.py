"""Number formatting shared by tables, views and the report (one place, so every table reads the same)."""

from __future__ import annotations

import argparse
import math
import sys
from typing import NoReturn

import pandas as pd

from foundation.terminal import WIDTH, lines, wrap  # one width and one wrap for the harness and analysis

__all__ = ["WIDTH", "lines", "wrap"]  # re-exported: analysis code writes fmt.wrap, fmt.WIDTH


TOO_FEW = "too few tasks to estimate"  # a minimum detectable Δ that would exceed 100 points


def mdd(v) -> str:
    """A minimum detectable Δ in points: '23.2', or TOO_FEW when it cannot be estimated (inf)."""
    return "-" if missing(v) else TOO_FEW if math.isinf(v) else f"{v:.1f}"


def missing(v) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA


def pct(v, digits: int = 1, sign: str = "%") -> str:
    """A fraction as percent: 0.781 -> '78.1%'."""
    return "-" if missing(v) else f"{100 * v:.{digits}f}{sign}"


def pct_ci(v, lo, hi, sign: str = "%") -> str:
    """'78.1% [70.0–85.2]' (95% bootstrap CI over tasks)."""
    if missing(v):
        return "-"
    return pct(v, sign=sign) if missing(lo) else f"{pct(v, sign=sign)} [{100 * lo:.1f}–{100 * hi:.1f}]"


def kilo(v) -> str:
    """Tokens the way IBM prints them: 110000 -> '110K'; small counts stay exact."""
    if missing(v):
        return "n/a"
    return f"{v / 1000:.0f}K" if abs(v) >= 10_000 else f"{v:,.0f}"


def signed_pct(v) -> str:
    """A relative change already in percent: 50.9 -> '+51%'."""
    return "-" if missing(v) else f"{v:+.0f}%"


def signed(v, digits: int = 1) -> str:
    """A signed difference, '-3.8': the one rounding of every printed Δ. The same pair's Δ reaches a view by
    different sums (a mean of differences, a difference of means) that disagree in the last bits (-3.7499999 vs
    -3.7500001); rounding to 9 places first makes them one number, so each view prints the same digits."""
    return f"{round(float(v), 9) + 0.0:+.{digits}f}"  # + 0.0: no '-0.0'


def points(v, lo=None, hi=None) -> str:
    """A difference in percentage points, with its CI when given: '+3.8 pts [-2.5, +10.0]'."""
    if missing(v):
        return "-"
    return f"{signed(v)} pts" if missing(lo) else f"{signed(v)} pts [{signed(lo)}, {signed(hi)}]"


def arrow(before: str, after: str, change: str) -> str:
    """IBM's token cells: '110K → 166K (+51%)'."""
    return f"{before} → {after} ({change})"


def pvalue(v) -> str:
    return "-" if missing(v) else ("<0.001" if v < 0.001 else f"{v:.3f}")


SIMULATED_PREFIX = "memdeliv-simulated/"


def model_label(name) -> str:
    """A model as tables and plots show it: the simulated world is labelled where every reader sees it."""
    name = "-" if missing(name) else str(name)
    return f"{name} (SIMULATED)" if name.startswith(SIMULATED_PREFIX) else name


def simulated_banner(models) -> str:
    """A line (wrapped to WIDTH) for the top of a printout that holds simulated rows ('' when none do)."""
    sim = sorted({str(m) for m in models if str(m).startswith(SIMULATED_PREFIX)})
    if not sim:
        return ""
    return wrap(f"SIMULATED WORLD ({', '.join(sim)}): a scripted agent with planted success probabilities, not a "
                f"language model; its numbers check the measuring chain (docs/simulated-world.md).")


def refuse(command: str, why: object) -> None:
    """Why a command refuses its input, `memdeliv <command>: ...` on stderr, wrapped to WIDTH (the caller exits 2):
    the one prefix of every analysis command's refusal, `command` its make target (table, tables, report, view)."""
    print(wrap(f"memdeliv {command}: {why}"), file=sys.stderr)


class CommandParser(argparse.ArgumentParser):
    """argparse for an analysis command: a bad argument is one `refuse` line and exit 2, not a usage block."""

    def __init__(self, command: str, **kwargs) -> None:
        super().__init__(**kwargs)
        self.command = command

    def error(self, message: str) -> NoReturn:
        refuse(self.command, message)
        raise SystemExit(2)


def margin_points(text: str) -> float:
    """An argparse type for a margin in points (--delta, make's DELTA=): a number above 0."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value > 0 or math.isinf(value):
        raise argparse.ArgumentTypeError(f"expected a number of points above 0, e.g. 5 (make: DELTA=5); got {text!r}")
    return value


def drop_constant(df: pd.DataFrame, columns=("benchmark", "split", "assembly")) -> pd.DataFrame:
    """`df` without those of `columns` that hold one value in every row (a header line names it; columns cost
    terminal width)."""
    return df.drop(columns=[c for c in columns if c in df and df[c].astype(str).nunique() <= 1])


def plain(df: pd.DataFrame) -> str:
    """A table for a terminal: columns two spaces apart, no pipes or padding (each costs columns). A table wider
    than WIDTH has its widest cells (a long strategy label, a list of ids) wrapped onto more lines of their row."""
    if not len(df):
        return "(no rows)"
    header = [str(c) for c in df.columns]
    rows = [[[cell] for cell in r] for r in df.astype(str).values.tolist()]  # each cell: its lines
    widths = [max(len(h), *(len(r[i][0]) for r in rows)) for i, h in enumerate(header)]
    while (over := sum(widths) + 2 * (len(widths) - 1) - WIDTH) > 0 and _narrow_one(header, rows, widths, over):
        pass

    def line(cells: list[str]) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()

    body = [line([c[k] if k < len(c) else "" for c in r]) for r in rows for k in range(max(map(len, r)))]
    return "\n".join([line(header), line(["-" * w for w in widths]), *body])


def _narrow_one(header: list[str], rows: list[list[list[str]]], widths: list[int], over: int) -> bool:
    """Wrap the widest column that can still be narrowed (never below its header or its longest word) by up to
    `over` columns, in place; False when none can."""
    for i in sorted(range(len(widths)), key=lambda i: -widths[i]):
        words = max((len(w) for r in rows for w in " ".join(r[i]).split()), default=0)
        target = max(widths[i] - over, len(header[i]), words)
        if target < widths[i]:
            for r in rows:
                r[i] = lines(" ".join(r[i]), target)
            widths[i] = max(len(header[i]), *(len(part) for r in rows for part in r[i]))
            return True
    return False
