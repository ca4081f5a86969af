"""Process-wide set-up for tau2, each done once and called by name (never a side effect of importing an agent
or the adapter):

- `quiet_tau2_logs()`: tau2 logs its registry when it is imported and every orchestrator step at INFO through
  loguru; only errors reach stderr. The package's __init__ calls it, as it must run before tau2 is imported.
- `register_agent()`: our agent under AGENT_NAME in tau2's registry (the name the Results files carry), called
  when a Tau2Benchmark is built.
- `commit_from_harness()`: the commit tau2 writes into a Results file's info is the harness's own (the run
  manifest's), looked up without tau2's `git rev-parse` in the working directory, which outside a checkout makes
  git print "fatal" and tau2 log an ERROR on every cell. Called with `register_agent()`.
"""

from __future__ import annotations

import sys
import threading

_lock = threading.Lock()
_done: set[str] = set()


def _once(name: str) -> bool:
    """True the first time `name` is asked for in this process."""
    with _lock:
        if name in _done:
            return False
        _done.add(name)
        return True


def quiet_tau2_logs() -> None:
    if _once("logs"):
        from loguru import logger

        logger.remove()
        logger.add(sys.stderr, level="ERROR")


def register_agent() -> None:
    if _once("agent"):
        from tau2.registry import registry

        from harness.benchmarks.tau2.agent import AGENT_NAME, MemoryAgent

        if AGENT_NAME not in registry.get_agents():
            registry.register_agent(MemoryAgent, AGENT_NAME)


def commit_from_harness() -> None:
    if _once("commit"):
        import tau2.run

        from harness.store.run_store import git_state

        sha = git_state()["sha"] or "unknown"  # tau2's own word when git has none
        tau2.run.get_commit_hash = lambda: sha  # type: ignore[attr-defined]  # get_info looks it up in its module
