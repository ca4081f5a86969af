"""`protocol_only`, a design's frame without content (a control): strategy (the class)."""

from strategies.protocol_only.strategy import ProtocolOnly

__all__ = ["ProtocolOnly"]
