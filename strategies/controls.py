"""What the control arms (`placebo`, `protocol_only`) share: their option `match`, the design whose frame (and, for
placebo, whose delivery's length) they reproduce. A design qualifies when its declaration names a frame
(strategies/frame.py), a plugin's too; a control arm never matches another."""

from __future__ import annotations

from typing import Any, Optional

from strategies.frame import Frame
from strategies.registry import available, declaration


def framed_designs() -> list[str]:
    """The strategies a control arm can match: those whose class declares a frame (a plugin's too)."""
    return [name for name in available() if name not in ("placebo", "protocol_only") and _frame_of(name) is not None]


def _frame_of(name: str) -> Optional[Frame]:
    try:
        return declaration(name).frame
    except Exception:  # a plugin that fails to load declares nothing here; running it says why
        return None


def check_match(arm: str, match: Any) -> str:
    """The `match` option: a design that declares its frame, else one clear line."""
    if not isinstance(match, str) or match in ("placebo", "protocol_only") or _frame_of(match) is None:
        raise ValueError(f"strategy {arm!r}: option match must be a design that declares its frame, one of "
                         f"{framed_designs()}; got {match!r}")
    return match
