"""`exp_rag`, Evo-Memory's ExpRAG baseline (similar past episodes as examples): strategy (the class)."""

from strategies.exp_rag.strategy import ExpRag

__all__ = ["ExpRag"]
