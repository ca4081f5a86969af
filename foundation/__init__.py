"""The bottom of the stack: what strategies, the harness and analysis all use and none of them owns (the entry-point
registry, the atomic file write). Imports nothing of the project."""
