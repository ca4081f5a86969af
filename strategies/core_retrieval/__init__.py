"""`core_retrieval`, ALTK-Evolve's core + retrieval delivery: strategy (the class)."""

from strategies.core_retrieval.strategy import CoreRetrieval

__all__ = ["CoreRetrieval"]
