"""The terminal width every printout keeps to, and the one helper that wraps text to it.

A plain definition at the foundation: the runner's progress and end-of-job lines and analysis's tables and
sentences (analysis.fmt re-exports both) wrap the same way.
"""

from __future__ import annotations

import textwrap

WIDTH = 160  # the terminal width every printout keeps to by default (files written may be wider)


def lines(text: str, width: int = WIDTH, indent: str = "") -> list[str]:
    """One line of text as lines of at most `width` columns, continuation lines indented (a long id or path
    unbroken, a hyphenated name kept whole)."""
    return textwrap.wrap(text, width, subsequent_indent=indent, break_long_words=False, break_on_hyphens=False) or [""]


def wrap(text: str, indent: str = "  ") -> str:
    """Each line of `text` wrapped to WIDTH columns, continuation lines indented."""
    return "\n".join("\n".join(lines(line, WIDTH, indent)) if len(line) > WIDTH else line for line in text.splitlines())
