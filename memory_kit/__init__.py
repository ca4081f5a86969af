"""What memory designs share and is not a strategy: prices and usage reports, embeddings, vector search, the
strategy roles' model client, JSON answers, the memory artifact's IO, extraction and consolidation of guidelines,
past experiences, stream data, and the priority drop under a token budget. Built on the strategy protocol
(strategies/base.py); a design package imports from here, never from another design's package. Each module is
imported by its own path: this package exports nothing."""
