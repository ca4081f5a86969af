"""The terminal width every printout keeps to, and the one helper that wraps a line to it.

A plain definition at the foundation: the runner's progress and end-of-job lines and analysis's tables and
sentences (analysis.fmt re-exports both) wrap the same way.
"""

from __future__ import annotations

import textwrap

WIDTH = 160  # the terminal width every printout keeps to by default (files written may be wider)


def wrap(text: str, indent: str = "  ") -> str:
    """Each line of `text` wrapped to WIDTH columns, continuation lines indented (a long id or path unbroken)."""
    return "\n".join(textwrap.fill(line, WIDTH, subsequent_indent=indent, break_long_words=False,
                                   break_on_hyphens=False) if len(line) > WIDTH else line
                     for line in text.splitlines())
