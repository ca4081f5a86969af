"""`dynamic_cheatsheet`, Dynamic Cheatsheet: strategy (the class, both variants), cheatsheet (the curator's
cheatsheet shared by the variants), retrieval_synthesis (the retrieval-synthesis variant)."""

from strategies.dynamic_cheatsheet.strategy import DynamicCheatsheet

__all__ = ["DynamicCheatsheet"]
