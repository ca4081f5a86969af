"""The viewer in a real browser: Debian's chromium (/usr/bin/chromium, installed by `make setup` as root) driven
by Playwright, never a downloaded browser. One small simulated run and one browser per module.

The run: model=simulated, strategies none and full, retail test tasks 5 and 9, one trial. The simulated world
fails an episode by dropping its task's last gold write (docs/simulated-world.md), so where `none` fails and
`full` succeeds the two agents part at the step where the successful one makes that call: the known divergence.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest
from conftest import REPO, read_records, run_in_process
from werkzeug.serving import make_server

BROWSER = Path("/usr/bin/chromium")
pytestmark = pytest.mark.skipif(not BROWSER.exists(), reason=f"no browser at {BROWSER}: the browser tests need "
                                "Debian's chromium (`make setup` installs it as root: apt-get install -y chromium)")
# a headless browser that reaches nothing but 127.0.0.1
BROWSER_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync"]
# docs/img/viewer-compare.png is refreshed only on request, so a test run leaves the working tree clean
DOCS_SCREENSHOT = REPO / "docs" / "img" / "viewer-compare.png"


@pytest.fixture(scope="module")
def sim_run(artifact, tmp_path_factory) -> Path:
    runs_dir = tmp_path_factory.mktemp("viewer-runs")
    done = run_in_process("model=simulated", f"model.world={artifact}", "strategy=none,full", "benchmark=tau2_retail",
                          "benchmark.task_ids=['5','9']", "benchmark.trials=1", "concurrency=2", f"memory={artifact}",
                          "run_name=sim", runs_dir=runs_dir, multirun=True)
    assert done.returncode == 0, done.stderr[-2000:]
    return runs_dir / "sim"


@pytest.fixture(scope="module")
def viewer(sim_run):
    from analysis.viewer.app import create_app

    server = make_server("127.0.0.1", 0, create_app([sim_run]), threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.port}"
    server.shutdown()


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium-profile")), executable_path=str(BROWSER), args=BROWSER_ARGS,
            headless=True, viewport={"width": 1280, "height": 900})
        context.set_default_timeout(15_000)
        yield context.new_page()
        context.close()


def episode_ids(sim_run: Path) -> dict[tuple[str, str], int]:
    """(strategy, task) -> the viewer's episode id (its row in the run's results, as the viewer loads them)."""
    from analysis.viewer.episodes import EpisodeIndex

    frame = EpisodeIndex([sim_run]).frame
    return {(r.strategy, r.task_id): int(r.id) for r in frame.itertuples()}


def test_the_list_filters_to_a_strategy_with_the_right_count(page, viewer, sim_run):
    records = read_records(sim_run)
    page.goto(viewer + "/")
    assert page.locator("#count").inner_text() == str(len(records))
    page.select_option("select[name=strategy]", "full")  # the menu submits itself
    page.wait_for_url("**/?*strategy=full*")
    want = [r for r in records if r["strategy"] == "full"]
    assert page.locator("#count").inner_text() == str(len(want))
    assert page.locator("#successes").inner_text() == str(sum(r["success"] for r in want))
    assert page.locator("td.strategy").all_inner_texts() == ["full"] * len(want)


def test_an_episode_page_shows_a_guideline_the_ledger_names(page, viewer, sim_run):
    record = next(r for r in read_records(sim_run) if r["strategy"] == "full" and r["task_id"] == "5")
    named = record["step_usage"][0]["delivered_ids"]
    assert named, "the full strategy delivered nothing at step 1"
    page.goto(f"{viewer}/episode/{episode_ids(sim_run)[('full', '5')]}")
    box = page.locator(".mem[data-step='0']")
    assert named[-1] in box.locator(".delivered-id").all_text_contents()
    assert f"{len(named)} guideline(s)" in box.inner_text()
    assert "planted p =" in page.locator("#simulated").inner_text()


def test_the_compare_page_shows_the_known_divergence(page, viewer, sim_run, tmp_path):
    records = read_records(sim_run)
    by_cell = {(r["strategy"], r["task_id"]): r for r in records}
    task = next((t for (s, t), r in by_cell.items() if s == "none" and not r["success"]
                 and by_cell[("full", t)]["success"]), None)
    assert task, f"no task where none failed and full succeeded: {[(k, r['success']) for k, r in by_cell.items()]}"
    won = json.loads((sim_run / by_cell[("full", task)]["trajectory"]).read_text())
    last_gold = won["tasks"][0]["evaluation_criteria"]["actions"][-1]["name"]
    agent_turns = [m for m in won["simulations"][0]["messages"] if m["role"] == "assistant" and m.get("usage")]
    known = 1 + next(i for i, m in enumerate(agent_turns)
                     if any(c["name"] == last_gold for c in m.get("tool_calls") or []))
    ids = episode_ids(sim_run)
    page.goto(f"{viewer}/episode/{ids[('none', task)]}")
    page.locator("a.compare-link").first.click()  # the episode page's way to its twin in the other cell
    page.wait_for_url("**/compare?*")
    assert page.locator("#divergence").get_attribute("data-step") == str(known)
    assert f"step {known}" in page.locator("#divergence-summary").inner_text()
    assert last_gold in page.locator("#divergence").inner_text()
    shot = DOCS_SCREENSHOT if os.environ.get("MEMDELIV_UPDATE_SCREENSHOTS") else tmp_path / "compare.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000


def test_the_report_fits_1280_px_and_its_rows_open_the_list(page, viewer, sim_run, tmp_path):
    from analysis.report import render
    from analysis.tables import analyse

    report = tmp_path / "report.html"
    report.write_text(render(analyse([str(sim_run)], n_boot=50), [str(sim_run)], plot=False, viewer=viewer + "/"))
    page.goto(report.as_uri())
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
    page.locator("table").first.locator("tr", has_text="full").locator("a").first.click()
    page.wait_for_url(viewer + "/?*")
    assert page.locator("#count").inner_text() == str(sum(r["strategy"] == "full" for r in read_records(sim_run)))
