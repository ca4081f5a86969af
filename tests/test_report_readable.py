"""`make report` read without help: where its links are it says they open in `make view`; in "memory vs steps"
two lines on the same values (full on two models) are both seen; the bar chart's cell labels do not collide."""

from __future__ import annotations

import re
import shutil

import pandas as pd

from analysis.views import plots
from conftest import REPO

FIXTURES = REPO / "tests" / "fixtures" / "runs"


def test_the_report_says_its_links_open_in_make_view(tmp_path):
    from analysis.report import VIEWER_URL, render
    from analysis.tables import analyse

    run = tmp_path / "run"
    shutil.copytree(FIXTURES / "constructed_mixed", run)
    page = render(analyse([str(run)]), [str(run)], plot=False)
    first_link = page.index(f"<a href='{VIEWER_URL}?")
    said = re.findall(r"<p class=note>Each row links to its episodes.*?</p>", page)
    assert said and page.index(said[0]) < first_link  # said before the links, where they are
    assert f"make view RUNS=\"{run}\"" in said[0].replace("&quot;", '"') and VIEWER_URL in said[0]


def _drawn(monkeypatch) -> dict:
    drawn: dict = {}

    def keep(fig, out_dir, name):
        drawn[name] = fig.axes
        return []

    monkeypatch.setattr(plots, "save", keep)
    return drawn


def test_two_lines_on_the_same_values_stay_distinguishable(monkeypatch, tmp_path):
    drawn = _drawn(monkeypatch)
    steps = pd.DataFrame([{"model": m, "strategy": s, "step": k, "memory_tokens": 0 if s == "none" else 4370}
                          for m in ("a/strong", "a/small") for s in ("none", "full") for k in range(5)])
    plots.memory_vs_steps(steps, tmp_path)
    (ax,) = drawn["memory_vs_steps"]
    full = [line for line in ax.get_lines() if line.get_label().startswith("full")]
    assert len(full) == 2 and list(full[0].get_ydata()) == list(full[1].get_ydata())  # the same values
    looks = {(line.get_marker(), line.get_linestyle(), line.get_markersize()) for line in ax.get_lines()}
    assert len(looks) == len(ax.get_lines())  # each line drawn its own way
    assert full[0].get_markersize() != full[1].get_markersize() and full[0].get_fillstyle() == "none"


def test_the_bar_charts_cell_labels_are_tilted(monkeypatch, tmp_path):
    drawn = _drawn(monkeypatch)
    summary = pd.DataFrame([{"benchmark": "tau2_retail", "split": "test", "model": f"memdeliv-simulated/{m}",
                             "assembly": "", "strategy": s, "success": 0.5, "success_lo": 0.4, "success_hi": 0.6}
                            for m in ("strong", "small", "tiny") for s in ("none", "full")])
    plots.strategy_bars(summary, tmp_path)
    (ax,) = drawn["strategy_bars"]
    labels = ax.get_xticklabels()
    assert len(labels) == 3 and all(label.get_rotation() > 0 and label.get_ha() == "right" for label in labels)
