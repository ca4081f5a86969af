"""`make report`'s page in a real browser (Debian's chromium driven by Playwright, as tests/test_viewer_browser.py):
at 1280 and 1920 px no header breaks inside a word, a model name takes at most two lines, the essential columns
lead and every other column is behind a toggle, and the page never runs wider than the window.

Two fixture runs (a constructed one with two models, the oracle's): 26 columns in the wide table, Pass^2..^4."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import REPO
from test_viewer_browser import BROWSER, BROWSER_ARGS

pytestmark = pytest.mark.skipif(not BROWSER.exists(), reason=f"no browser at {BROWSER}: the browser tests need "
                                "Debian's chromium (`make setup` installs it as root: apt-get install -y chromium)")
RUNS = [REPO / "tests" / "fixtures" / "runs" / name for name in ("constructed_mixed", "oracle_retail")]
COMPACT = ["model", "strategy", "tasks×k", "errors", "success", "pass^k", "Δ vs none", "tokens", "memory", "cost"]

# Every word (a run of non-spaces) of every header: the lines its glyphs lie on. More than one: broken inside.
BROKEN_WORDS = """() => {
  const broken = [];
  let words = 0;
  for (const th of document.querySelectorAll('th')) {
    const walk = document.createTreeWalker(th, NodeFilter.SHOW_TEXT);
    for (let node = walk.nextNode(); node; node = walk.nextNode()) {
      for (const m of node.data.matchAll(/\\S+/g)) {
        const range = document.createRange();
        range.setStart(node, m.index);
        range.setEnd(node, m.index + m[0].length);
        const lines = new Set([...range.getClientRects()].map(r => Math.round(r.top)));
        words += lines.size > 0;
        if (lines.size > 1) broken.push(`${th.textContent}: ${m[0]}`);
      }
    }
  }
  return {broken, words};
}"""
# The most lines a model name takes in any cell
MODEL_LINES = """() => Math.max(0, ...[...document.querySelectorAll('.model')].map(
  el => new Set([...el.getClientRects()].flatMap(r => r.height ? [Math.round(r.top)] : [])).size))"""


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Path:
    from analysis.report import render
    from analysis.tables import analyse

    path = tmp_path_factory.mktemp("report") / "report.html"
    path.write_text(render(analyse([str(r) for r in RUNS], n_boot=50), [str(r) for r in RUNS], plot=False),
                    encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(BROWSER), args=BROWSER_ARGS, headless=True)
        yield browser
        browser.close()


@pytest.mark.parametrize("width", [1280, 1920])
def test_headers_stay_whole_words_and_the_page_fits(browser, report, width, tmp_path):
    page = browser.new_page(viewport={"width": width, "height": 900})
    page.goto(report.as_uri())
    first = page.locator("table").first
    assert first.locator("th").all_inner_texts() == COMPACT  # the terminal table's columns lead
    every = page.locator("details").first
    assert not every.locator("table").is_visible()  # the rest: one click away
    every.locator("summary").click()
    assert every.locator("th", has_text="completion/task").is_visible()
    measured = page.evaluate(BROKEN_WORDS)
    assert measured["words"] > 60 and measured["broken"] == [], measured["broken"]
    assert 1 <= page.evaluate(MODEL_LINES) <= 2
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    shot = tmp_path / f"report-{width}.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    page.close()


def test_the_check_finds_a_header_broken_inside_a_word(browser, report):
    """The measurement itself: the old style (a cell may break anywhere) breaks 'completion/task' at 1280 px."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(report.as_uri())
    page.add_style_tag(content="th{white-space:normal!important;overflow-wrap:anywhere;width:1px}")
    page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
    assert any("completion/task" in b for b in page.evaluate(BROKEN_WORDS)["broken"])
    page.close()
