"""One atomic file write: a temp file beside the target, then `replace`, so a reader or a crash never sees half
a file. In foundation/, below strategies, the harness and analysis, which all use it."""

from __future__ import annotations

import os
import threading
from pathlib import Path


def _temp_beside(path: Path) -> Path:
    # Same directory (replace is atomic only within one file system); unique per process and thread, so two
    # writers of one file never share a temp file.
    return path.with_name(f"{path.name}.tmp{os.getpid()}.{threading.get_ident()}")


def write_text_atomic(path: str | Path, text: str) -> None:
    """Write `text` (UTF-8) to `path` atomically; the parent folder must exist."""
    path = Path(path)
    tmp = _temp_beside(path)
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def write_bytes_atomic(path: str | Path, data: bytes) -> None:
    """Write `data` to `path` atomically; the parent folder must exist."""
    path = Path(path)
    tmp = _temp_beside(path)
    tmp.write_bytes(data)
    tmp.replace(path)
