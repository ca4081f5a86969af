"""`none`, the baseline that delivers nothing: strategy (the class)."""

from strategies.none.strategy import NoMemory

__all__ = ["NoMemory"]
