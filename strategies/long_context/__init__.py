"""`long_context`, every condensed past train episode in the prompt: strategy (the class)."""

from strategies.long_context.strategy import LongContext

__all__ = ["LongContext"]
