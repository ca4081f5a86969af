"""Records drawn from a KNOWN truth, no language model: per strategy a success probability per task, one
Bernoulli draw per task x trial, and fixed token figures. The decision layer (recommend, power) is checked
against these, because here the right answer is known."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

# tokens per task as in the simulated world: a memory block costs prompt tokens on every step
TOKENS = {"none": 13_000, "core_retrieval": 19_000, "full": 39_000}


def draw(p: Mapping[str, Sequence[float] | float], tasks: int, trials: int, seed: int,
         tokens: Mapping[str, int] = TOKENS, model: str = "known-truth/model") -> pd.DataFrame:
    """p = strategy -> probability (one for every task, or one per task). Independent draws per strategy."""
    rng = np.random.default_rng(seed)
    rows = []
    for strategy, prob in p.items():
        probs = np.broadcast_to(np.asarray(prob, dtype=float), (tasks,))
        wins = rng.random((tasks, trials)) < probs[:, None]
        for t in range(tasks):
            for j in range(trials):
                rows.append({"run": "known-truth", "run_dir": "nowhere", "job": f"b/test/{model}/{strategy}",
                             "benchmark": "b", "split": "test", "model": model, "strategy": strategy,
                             "task_id": f"t{t:04d}", "trial": j, "success": bool(wins[t, j]), "error": None,
                             "prompt_tokens": tokens[strategy] - 400, "completion_tokens": 400,
                             "memory_tokens": tokens[strategy] - TOKENS["none"], "memory": None})
    return pd.DataFrame(rows)


def heterogeneous(tasks: int, rng: np.random.Generator, base: tuple[float, float] = (0.3, 0.7),
                  effect: float = 0.15, spread: float = 0.2) -> tuple[np.ndarray, np.ndarray]:
    """Per-task p for a baseline and a treatment whose effect varies from task to task (between-task variance)."""
    b = rng.uniform(*base, size=tasks)
    a = np.clip(b + rng.normal(effect, spread, size=tasks), 0.0, 1.0)
    return a, b
