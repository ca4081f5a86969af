"""The run directory (harness/store/run_store.py) and the one-writer lock of a job (harness/store/joblock.py).

The names below are the store's API for the rest of the harness: `from harness.store import RunStore`."""

from __future__ import annotations

from harness.store.run_store import (REDACTED, RESULTS, RunStore, RunStoreError, latest_per_episode, now_iso, redact,
                                     redact_text, settled)

__all__ = ["REDACTED", "RESULTS", "RunStore", "RunStoreError", "latest_per_episode", "now_iso", "redact",
           "redact_text", "settled"]
