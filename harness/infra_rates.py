"""The "infra rates differ" rule, defined once. The runner's end-of-job warning (harness/runner/infra_balance.py)
and analysis's warnings (analysis/statistics/metrics.py `infra_imbalance` above every table,
analysis/statistics/infra.py for power and recommend) all decide and word it here.

Infra episodes (still `infra` after retries) count as failed trials (tau2-bench's leaderboard convention), but a
strategy that causes them (a memory block a provider times out on, say) must be visible. So within one comparison
cell, the strategies' infra rates (infra episodes / episodes, the latest attempt of each episode) are compared
exactly, and any difference, even 0 of 40 against 1 of 40, is warned: the rule is no test, it points a reader at
`error_detail`.

The cell is what strategies are compared within: `CELL`, a row's benchmark, split, model and request-assembly
settings. Analysis groups by the same key, with the three settings shown as its `assembly` column
(analysis/runs/identity.py); the runner compares the jobs of its own run directory; each names a strategy by
`strategy_label` (analysis adds its identity tags: ground truth, provenance, memory artifact).

Plain definitions, standard library only: analysis imports this module without loading any runner code.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Iterable, Mapping, Optional

INFRA = "infra"  # harness/errors.py's label of a failure outside agent and strategy that outlived its retries
CELL = ("benchmark", "split", "model", "placement", "context_policy", "answer_mode")

Counts = Mapping[str, tuple[int, int]]  # strategy label -> (infra episodes, episodes)


def strategy_label(strategy: object, variant: Optional[str] = None) -> str:
    """`core_retrieval (top_k=3)`: a strategy with a variant of its options (a dose cell) is a strategy of its own."""
    return f"{strategy} ({variant})" if variant else str(strategy)


def rates_differ(counts: Counts) -> bool:
    """Whether two or more strategies have infra rates that are not all equal (exactly: any difference counts)."""
    rates = {Fraction(infra, episodes) for infra, episodes in counts.values() if episodes}
    return len(counts) >= 2 and len(rates) >= 2


def differ_text(counts: Counts, so_far: bool = False) -> str:
    """'infra errors differ between strategies (none 0/8, full 2/8): a strategy may cause them', or '' when the
    rates agree. `so_far`: the runner's line, over the jobs recorded until now."""
    if not rates_differ(counts):
        return ""
    shown = ", ".join(f"{label} {infra}/{episodes}" for label, (infra, episodes) in counts.items())
    return f"infra errors differ between strategies{' so far' if so_far else ''} ({shown}): a strategy may cause them"


def where(values: Iterable[Any]) -> str:
    """'tau2_retail/test/gpt-4.1/placement=first_user_message': the cell's parts that are set, joined."""
    return "/".join(str(v) for v in values if _is_set(v))


def _is_set(value: object) -> bool:
    try:
        return value is not None and value == value and value != ""  # value != value: a NaN (a missing column)
    except TypeError:  # pandas' NA has no truth value: missing too
        return False
