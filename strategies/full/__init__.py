"""`full`, every guideline at every step: strategy (the class)."""

from strategies.full.strategy import FullMemory

__all__ = ["FullMemory"]
