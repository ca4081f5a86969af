"""`python -m analysis.report RUN_DIR... [--experiment NAME] [--out FILE]` (`make report`): one HTML page.

Self-contained: the tables are inline HTML and the plots are PNGs embedded as base64, so the file can be
mailed or attached as it is. Default output: <first run>/analysis/report.html.

The page reads at a glance: the per-strategy table leads with the terminal table's essential columns (success,
Δ vs none, tokens, cost; analysis.views.displays.compact_display), every other column is one click away (<details>).
The page is a list of sections (SECTIONS): a new one is a function of the Page that returns its HTML.
"""

from __future__ import annotations

import base64
import html
import re
import sys
import tempfile
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable
from urllib.parse import urlencode

import pandas as pd

from analysis import fmt, task_effects
from analysis.statistics.metrics import GROUP
from analysis.tables import Analysis, cli, view_line
from analysis.views import ibm, plots
from analysis.views.displays import COMPACT_NOTE, compact_display, models_display, pairs_display, strategies_display

# Headers and figures never break (tests/test_report_browser.py measures the headers at 1280 and 1920 px); a
# model name may, after its slashes only (model_cell). A table wider than the window scrolls in its own box, so
# the page itself stays within the window.
STYLE = """body{font-family:system-ui,sans-serif;margin:1em;max-width:1880px}
table{border-collapse:collapse;font-size:13px;margin:.5em 0}
th,td{border:1px solid #ccc;padding:2px 6px;text-align:left;vertical-align:top;white-space:nowrap;
word-break:keep-all;overflow-wrap:normal;hyphens:none}
th{background:#f3f3f3;font-weight:600}
.scroll{overflow-x:auto;max-width:100%;margin-bottom:1.5em}
.model{white-space:normal}.seg{white-space:nowrap}
details{margin:.5em 0 1.5em}summary{cursor:pointer;color:#036}
img{max-width:100%;border:1px solid #eee;margin:.5em 0}
.note{color:#555;font-size:13px}"""
# `make view`'s address (analysis/viewer/__main__.py serves there when the port is free); each row of the
# per-strategy tables links to the viewer's episode list filtered to that row's cell
VIEWER_URL = "http://127.0.0.1:8765/"


@dataclass
class Page:
    """What every section is drawn from."""

    result: Analysis
    runs: list[str]
    experiment: str | None
    plot: bool
    viewer: str


def viewer_link(row: pd.Series, viewer: str) -> str:
    """The viewer's episode list filtered to one summary row's cell (benchmark, split, model, assembly, strategy)."""
    params = [(key, str(row[key])) for key in GROUP if key in row and not fmt.missing(row[key]) and str(row[key])]
    return viewer + "?" + urlencode(params)


def model_cell(text: str) -> str:
    """A model name that may break after a slash and nowhere else (a hyphen in it is no place to break)."""
    parts = re.split(r"(?<=/)", text)
    return "<span class=model>" + "<wbr>".join(f"<span class=seg>{html.escape(p)}</span>" for p in parts if p) \
        + "</span>"


def boxed(table_html: str) -> str:
    return f"<div class=scroll>{table_html}</div>"


def linked_table(shown: pd.DataFrame, summary: pd.DataFrame, viewer: str) -> str:
    """`shown` (one row per summary row, in order) as HTML, every row's cells linking to its episodes."""
    return plain_table(shown, [html.escape(viewer_link(row, viewer), quote=True) for _, row in summary.iterrows()])


def plain_table(table: pd.DataFrame, links: list[str] | None = None) -> str:
    """`table` as HTML in its scroll box; with `links` (one per row, escaped), each cell of a row links there."""
    cells = table.astype(str).map(html.escape)
    if "model" in table:
        cells["model"] = table["model"].astype(str).map(model_cell)
    if links is not None:
        for col in cells.columns:
            cells[col] = [f"<a href='{link}'>{value}</a>" for link, value in zip(links, cells[col])]
    cells.columns = [html.escape(str(c)) for c in cells.columns]
    return boxed(cells.to_html(index=False, border=0, escape=False))


def said_once(shown: pd.DataFrame, columns: tuple[str, ...]) -> tuple[pd.DataFrame, list[str]]:
    """Columns with one value in every row, dropped and said once above the table (to save width)."""
    same = []
    for col in columns:
        if col in shown and shown[col].nunique() == 1:
            same.append(f"{col} {shown[col].iloc[0]}")
            shown = shown.drop(columns=col)
    return shown, same


def head(page: Page) -> str:
    r = page.result
    parts = [f"<h1>memdeliv report</h1><p class=note>runs: {html.escape(', '.join(page.runs))}; "
             f"built {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC; {len(r.records)} records</p>",
             f"<p><b>{html.escape(view_line(r.exclude))}</b></p>"]
    if banner := fmt.simulated_banner(r.summary["model"].dropna() if "model" in r.summary else []):
        parts.append(f"<p><b>{html.escape(' '.join(banner.split()))}</b></p>")
    parts += [f"<p class=note>Task set: {html.escape(line)}</p>" for line in r.labels]
    parts += [f"<p class=note>{html.escape(line)}</p>" for line in r.identity]  # memory ids, shared tasks
    parts += [f"<p class=note><b>WARNING</b>: {html.escape(w)}</p>" for w in r.warnings]
    return "".join(parts)


def links_note(page: Page, what: str = "Each row links to its episodes") -> str:
    """Said where the links are: they open only while `make view` serves these runs at the viewer's address."""
    return (f"<p class=note>{what} in the episode viewer at {html.escape(page.viewer)}: "
            f"the links open while <code>make view RUNS=\"{html.escape(' '.join(page.runs))}\"</code> runs "
            "(docs/viewer.md); without it they lead nowhere.</p>")


def per_strategy(page: Page) -> str:
    """The terminal table's columns first; every column behind a toggle."""
    summary = page.result.summary
    compact, same = compact_display(summary), []
    if "benchmark/split" not in compact and len(summary):  # one benchmark: compact_display left it out
        same = [f"{summary['benchmark'].iloc[0]}/{summary['split'].iloc[0]}"]
    wide, _ = said_once(strategies_display(summary), ("benchmark", "split"))
    every = (f"<details><summary>Every column ({len(wide.columns)}: prompt, cached and completion tokens, build "
             f"cost, steps, USD by role...)</summary>{linked_table(wide, summary, page.viewer)}</details>")
    return ("<h2>Per strategy</h2>" + (f"<p class=note>Every row: {html.escape(', '.join(same))}</p>" if same else "")
            + links_note(page) + linked_table(compact, summary, page.viewer)
            + f"<p class=note>{html.escape(COMPACT_NOTE)} {html.escape(page.result.notes)}</p>" + every)


def tables(page: Page) -> str:
    r = page.result
    sections = [("Per model (IBM's shape)", models_display(r.models)),
                ("Paired comparisons (same tasks)", pairs_display(r.pairs))]
    sections += [(f"IBM view {name}: published vs measured", table) for name, table in r.views.items()]
    return "".join(f"<h2>{html.escape(title)}</h2>" + plain_table(table) for title, table in sections)


def task_effects_section(page: Page) -> str:  # helped / harmed tasks, compare links (issue 28)
    section = task_effects.html_section(page.result, page.viewer)
    title, cut, rest = section.partition("</h2>")
    note = links_note(page, "Each task id links to its compare page (none's episode beside the strategy's)")
    return title + cut + note + rest if cut else section


def sources(page: Page) -> str:
    if not page.experiment:
        return ""
    return "<p class=note>Sources: " + "<br>".join(html.escape(s) for s in ibm.sources(page.experiment)) + "</p>"


def figures(page: Page) -> str:
    if not page.plot:
        return ""
    r, parts = page.result, []
    with tempfile.TemporaryDirectory() as tmp:
        for png in (p for p in plots.all_plots(r.summary, r.steps, r.history, Path(tmp), r.records)
                    if p.suffix == ".png"):
            data = base64.b64encode(png.read_bytes()).decode("ascii")
            parts.append(f"<h2>{html.escape(png.stem.replace('_', ' '))}</h2>"
                         f"<img alt='{png.stem}' src='data:image/png;base64,{data}'>")
    return "".join(parts)


SECTIONS: list[Callable[[Page], str]] = [head, per_strategy, tables, task_effects_section, sources, figures]


def render(result: Analysis, runs: list[str], experiment: str | None = None, plot: bool = True,
           viewer: str = VIEWER_URL) -> str:
    page = Page(result, runs, experiment, plot, viewer)
    body = "".join(section(page) for section in SECTIONS)
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>memdeliv report</title>"
            f"<style>{STYLE}</style></head><body>{body}</body></html>\n")


def main(argv: list[str] | None = None) -> int:
    args, out, result = cli("report", __doc__, argv, "analysis/report.html")
    if result is None:
        return 2
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render(result, args.runs, args.experiment, plot=not args.no_plots), encoding="utf-8")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
