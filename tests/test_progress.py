"""Progress a person can read: plain lines in a log file, agent steps counted within an episode."""

from __future__ import annotations

import io
import time

from harness.ledger import Ledger
from harness.model_client import Usage
from harness.progress import Progress


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def _step(ledger: Ledger) -> None:
    ledger.add_agent_step(Usage(prompt_tokens=10, completion_tokens=2, cached_tokens=None, cost_usd=None,
                                latency_s=0.0), 0, [])


def test_a_log_file_gets_plain_periodic_lines_with_steps():
    out, ledger = io.StringIO(), Ledger()
    progress = Progress("b/test/m/full", total=3, done=1, stream=out, every=0.05, tick=0.01)
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
    out, ledger = _Tty(), Ledger()
    progress = Progress("job", total=1, done=0, stream=out, tick=0.01)
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
