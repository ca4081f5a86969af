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

from analysis import ibm, plots
from analysis.tables import Analysis, cli, models_display, pairs_display, strategies_display, view_line

STYLE = """body{font-family:system-ui,sans-serif;margin:2em;max-width:1400px}
table{border-collapse:collapse;font-size:13px;margin:.5em 0 1.5em}th,td{border:1px solid #ccc;padding:3px 6px}
th{background:#f3f3f3}img{max-width:100%;border:1px solid #eee;margin:.5em 0}.note{color:#555;font-size:13px}"""


def render(result: Analysis, runs: list[str], experiment: str | None = None, plot: bool = True) -> str:
    parts = [f"<h1>memdeliv report</h1><p class=note>runs: {html.escape(', '.join(runs))}; "
             f"built {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC; {len(result.records)} records</p>",
             f"<p><b>{html.escape(view_line(result.exclude))}</b></p>",
             f"<p class=note>{html.escape(result.notes)}</p>"]
    parts += [f"<p class=note>Task set: {html.escape(line)}</p>" for line in result.labels]
    parts += [f"<p class=note><b>WARNING</b>: {html.escape(w)}</p>" for w in result.warnings]
    sections = [("Per strategy", strategies_display(result.summary)),
                ("Per model (IBM's shape)", models_display(result.models)),
                ("Paired comparisons (same tasks)", pairs_display(result.pairs))]
    sections += [(f"IBM view {name}: published vs measured", table) for name, table in result.views.items()]
    for title, table in sections:
        parts.append(f"<h2>{html.escape(title)}</h2>" + table.to_html(index=False, border=0, escape=True))
    if experiment:
        parts.append("<p class=note>Sources: " + "<br>".join(html.escape(s) for s in ibm.sources(experiment))
                     + "</p>")
    with tempfile.TemporaryDirectory() as tmp:
        drawn = plots.all_plots(result.summary, result.steps, result.history, Path(tmp)) if plot else []
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
