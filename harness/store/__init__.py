"""The run directory (harness/store/run_store.py) and the one-writer lock of a job (harness/store/joblock.py).

The names below are the store's API for the rest of the harness: `from harness.store import RunStore`. Rows are
harness/row.py's `Row`; only the store writes every file of a run directory (results.jsonl and retries.jsonl among
them)."""

from __future__ import annotations

from harness.store.run_store import RESULTS, RunStore, RunStoreError, now_iso, redact

__all__ = ["RESULTS", "RunStore", "RunStoreError", "now_iso", "redact"]
