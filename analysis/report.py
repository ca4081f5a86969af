"""`python -m analysis.report RUN_DIR... [--experiment NAME] [--out FILE]` (`make report`): one HTML page.

Self-contained: the tables are inline HTML and the plots are PNGs embedded as base64, so the file can be
mailed or attached as it is. Default output: <first run>/analysis/report.html.
"""

from __future__ import annotations

import base64
import html
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from urllib.parse import urlencode

import pandas as pd

from analysis import fmt, ibm, plots
from analysis.displays import models_display, pairs_display, strategies_display
from analysis.metrics import GROUP
from analysis.tables import Analysis, cli, view_line

# The wide per-strategy table fits a 1280 px window whatever columns it grows: small type, and a cell may break
# anywhere when the window is too narrow for its words (browsers break at spaces and slashes first)
STYLE = """body{font-family:system-ui,sans-serif;margin:1em;max-width:1400px}
table{border-collapse:collapse;font-size:11px;margin:.5em 0 1.5em}
th,td{border:1px solid #ccc;padding:2px 3px;overflow-wrap:anywhere}th{background:#f3f3f3;font-weight:600}
img{max-width:100%;border:1px solid #eee;margin:.5em 0}
.note{color:#555;font-size:13px}"""
# `make view`'s address (analysis/viewer/__main__.py serves there when the port is free); each row of the
# per-strategy table links to the viewer's episode list filtered to that row's cell
VIEWER_URL = "http://127.0.0.1:8765/"


def viewer_link(row: pd.Series, viewer: str) -> str:
    """The viewer's episode list filtered to one summary row's cell (benchmark, split, model, assembly, strategy)."""
    params = [(key, str(row[key])) for key in GROUP if key in row and not fmt.missing(row[key]) and str(row[key])]
    return viewer + "?" + urlencode(params)


def linked_table(shown: pd.DataFrame, summary: pd.DataFrame, viewer: str) -> str:
    """`shown` (one row per summary row, in order) as HTML, every row's cells linking to its episodes."""
    cells = shown.astype(str).map(html.escape)
    links = [html.escape(viewer_link(row, viewer), quote=True) for _, row in summary.iterrows()]
    for col in cells.columns:
        cells[col] = [f"<a href='{link}'>{value}</a>" for link, value in zip(links, cells[col])]
    # 'tokens/task' may break after its slash: the headers, not the figures, made the table run past 1280 px
    cells.columns = [html.escape(str(c)).replace("/", "/<wbr>") for c in cells.columns]
    return cells.to_html(index=False, border=0, escape=False)


def render(result: Analysis, runs: list[str], experiment: str | None = None, plot: bool = True,
           viewer: str = VIEWER_URL) -> str:
    parts = [f"<h1>memdeliv report</h1><p class=note>runs: {html.escape(', '.join(runs))}; "
             f"built {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC; {len(result.records)} records</p>",
             f"<p><b>{html.escape(view_line(result.exclude))}</b></p>",
             f"<p class=note>{html.escape(result.notes)}</p>"]
    parts += [f"<p class=note>Task set: {html.escape(line)}</p>" for line in result.labels]
    parts += [f"<p class=note><b>WARNING</b>: {html.escape(w)}</p>" for w in result.warnings]
    shown, same = strategies_display(result.summary), []
    for col in ("benchmark", "split"):  # one value in every row: said once above the table, to save width
        if col in shown and shown[col].nunique() == 1:
            same.append(f"{col} {shown[col].iloc[0]}")
            shown = shown.drop(columns=col)
    parts.append("<h2>Per strategy</h2>" + (f"<p class=note>Every row: {html.escape(', '.join(same))}</p>"
                                            if same else "") + linked_table(shown, result.summary, viewer))
    sections = [("Per model (IBM's shape)", models_display(result.models)),
                ("Paired comparisons (same tasks)", pairs_display(result.pairs))]
    sections += [(f"IBM view {name}: published vs measured", table) for name, table in result.views.items()]
    for title, table in sections:
        parts.append(f"<h2>{html.escape(title)}</h2>" + table.to_html(index=False, border=0, escape=True))
    if experiment:
        parts.append("<p class=note>Sources: " + "<br>".join(html.escape(s) for s in ibm.sources(experiment))
                     + "</p>")
    with tempfile.TemporaryDirectory() as tmp:
        drawn = plots.all_plots(result.summary, result.steps, result.history, Path(tmp),
                                result.records) if plot else []
        for png in (p for p in drawn if p.suffix == ".png"):
            data = base64.b64encode(png.read_bytes()).decode("ascii")
            parts.append(f"<h2>{html.escape(png.stem.replace('_', ' '))}</h2>"
                         f"<img alt='{png.stem}' src='data:image/png;base64,{data}'>")
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>memdeliv report</title>"
            f"<style>{STYLE}</style></head><body>{''.join(parts)}</body></html>\n")


def main(argv: list[str] | None = None) -> int:
    args, out, result = cli(__doc__, argv, "analysis/report.html")
    if result is None:
        return 2
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render(result, args.runs, args.experiment, plot=not args.no_plots), encoding="utf-8")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
