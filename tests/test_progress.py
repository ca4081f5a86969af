"""Progress a person can read: plain lines in a log file, agent steps counted within an episode."""

from __future__ import annotations

import io
import time

from harness.ledger import Ledger
from harness.serving.model_client import Usage
from harness.runner.progress import Progress


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def _step(ledger: Ledger) -> None:
    ledger.add_agent_step(Usage(prompt_tokens=10, completion_tokens=2, cached_tokens=None, cost_usd=None,
                                latency_s=0.0), 0, [])


def test_a_log_file_gets_plain_periodic_lines_with_steps():
    out = io.StringIO()
    progress = Progress("b/test/m/full", total=3, done=1, stream=out, every=0.05, tick=0.01)
    ledger = Ledger(on_step=progress.step)  # the episode's ledger, as the runner opens it (harness.ledger.episode)
    for _ in range(4):
        _step(ledger)
    time.sleep(0.2)  # a long first episode: lines appear before it ends
    assert "memdeliv: b/test/m/full: 1/3 episodes, 4 agent steps" in out.getvalue()
    progress.update()
    progress.close()
    text = out.getvalue()
    assert "\r" not in text and text.splitlines()[-1].startswith("memdeliv: b/test/m/full: 2/3 episodes, 4 agent")
    assert all(len(line) < 200 for line in text.splitlines())


def test_a_terminal_gets_a_bar_showing_steps():
    out = _Tty()
    progress = Progress("job", total=1, done=0, stream=out, tick=0.01)
    ledger = Ledger(on_step=progress.step)
    _step(ledger)
    _step(ledger)
    time.sleep(0.1)
    progress.update()
    progress.close()
    assert "2 steps" in out.getvalue() and "1/1" in out.getvalue()


def test_disabled_prints_nothing():
    out = io.StringIO()
    progress = Progress("job", total=2, done=0, enabled=False, stream=out, every=0.01, tick=0.01)
    progress.update(2)
    progress.close()
    assert out.getvalue() == ""


def _record(success, error=None, cost=0.01):
    return {"success": success, "error": error, "steps": 2, "cost_usd": cost, "user_prompt_tokens": 5,
            "user_cost_usd": None if cost is None else cost / 2, "judge_calls": 0, "judge_cost_usd": 0.0}


def test_lines_show_success_errors_spend_and_projection_without_control_characters():
    out = io.StringIO()
    # a resumed job: one episode recorded before (success), three to run
    progress = Progress("job", total=4, done=1, stream=out, every=0.05, tick=0.01, recorded=[_record(True)])
    progress.update(1, _record(False, error="agent"))
    time.sleep(0.2)
    progress.close()
    text = out.getvalue()
    last = text.splitlines()[-1]
    # 2 episodes at $0.015 each: $0.03 spent; 2 left at that mean: $0.06 projected
    assert "2/4 episodes" in last and "success 50.0%" in last and "errors: agent 1" in last
    assert "$0.0300 spent, ~$0.0600 projected" in last
    assert not any(ord(c) < 32 and c != "\n" for c in text)  # readable in a CI log: no \r, no escapes


def test_an_unpriced_episode_says_unpriced_never_zero():
    out = io.StringIO()
    progress = Progress("job", total=2, done=0, stream=out, every=60, tick=0.01)
    progress.update(1, _record(True, cost=None))
    progress.close()
    assert "USD n/a (unpriced)" in out.getvalue() and "$0.0000" not in out.getvalue()


def test_an_episode_without_a_priced_call_is_not_zero_dollars():
    """Every episode so far failed before its first call (no cost figure, the table's n/a): not "$0.0000"."""
    out = io.StringIO()
    progress = Progress("job", total=2, done=0, stream=out, every=60, tick=0.01)
    progress.update(1, {"success": False, "error": "harness", "steps": 0, "judge_cost_usd": 0.0})
    progress.close()
    assert "USD n/a" in out.getvalue() and "$0.0000" not in out.getvalue()
    out = io.StringIO()
    progress = Progress("job", total=1, done=0, stream=out, every=60, tick=0.01)
    progress.update(1, {**_record(True), "strategy_calls": 1, "strategy_cost_usd": None})  # its ranker: no price
    progress.close()
    assert "USD n/a (unpriced)" in out.getvalue() and "$0.0" not in out.getvalue()


def test_a_strategy_s_own_calls_are_counted_once():
    """Its ranker's $0.005 joins the agent's $0.01 and the user's $0.005: $0.02, as the budget and tables add it."""
    out = io.StringIO()
    progress = Progress("job", total=1, done=0, stream=out, every=60, tick=0.01)
    progress.update(1, {**_record(True), "strategy_calls": 1, "strategy_cost_usd": 0.005})
    progress.close()
    assert "$0.0200 spent" in out.getvalue()


def test_a_terminal_bar_shows_the_spend():
    out = _Tty()
    progress = Progress("job", total=2, done=0, stream=out, tick=0.01)
    progress.update(1, _record(True))
    progress.close()
    assert "$0.0150 spent" in out.getvalue() and "1/2" in out.getvalue()
