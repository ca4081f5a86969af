"""Task order for online learners (`benchmark.orders=N`, docs/strategies.md "Task order"): an online learner's
success depends on the order its stream meets the tasks, so a job run over N seeded permutations of the stream
records each trial's order (the row's `order`). Per (benchmark, split, model, assembly) cell and strategy with more
than one order this prints success in each order (over that order's trials: every task, the same tasks in every
order) and the spread across orders: best - worst, and the standard deviation of the per-order rates. Every
other table reads the orders as trials of the stream (a trial is one pass of the stream, whatever its order).
"""

from __future__ import annotations

import pandas as pd

from analysis import fmt
from analysis.statistics.metrics import CELL, EXCLUDED, key_of, valid, with_assembly

COLUMN = "order"  # harness/row.py


def per_order(records: pd.DataFrame) -> pd.DataFrame:
    """One strategy's records -> per order: success rate, episodes, trials (index = order)."""
    grouped = records.groupby(records[COLUMN].astype(int))
    return pd.DataFrame({"success": grouped["success"].mean().astype(float), "episodes": grouped.size(),
                         "trials": grouped["trial"].nunique()})


def strategy_line(strategy: str, orders: pd.DataFrame) -> str:
    rates = orders["success"]
    each = ", ".join(f"{int(k)}: {fmt.pct(v)}" for k, v in rates.items())
    sizes = sorted({f"{int(n)} episodes ({int(t)} trial{'s' if t != 1 else ''})"
                    for n, t in zip(orders["episodes"], orders["trials"])})
    return (f"{strategy}: success per order {each}; spread {100 * (rates.max() - rates.min()):.1f} pts "
            f"(best - worst), sd {100 * rates.std(ddof=1):.1f} pts over {len(rates)} orders; each order "
            f"{' / '.join(sizes)}")


def terminal(records: pd.DataFrame, exclude: tuple[str, ...] = EXCLUDED) -> str:
    """Every cell's per-order lines under a title ('' when no strategy ran more than one order)."""
    if COLUMN not in records or records[COLUMN].isna().all():
        return ""
    ok = with_assembly(valid(records[records[COLUMN].notna()], exclude))
    blocks = []
    for key, cell in ok.groupby(CELL, sort=False, dropna=False):
        lines = [strategy_line(str(s), per_order(g)) for s, g in cell.groupby("strategy", sort=False)
                 if g[COLUMN].nunique() > 1]
        if lines:
            where = "/".join(v for v in key_of(key) if v)
            blocks.append(f"{where}:\n" + "\n".join(fmt.wrap(f"  {line}", "    ") for line in lines))
    if not blocks:
        return ""
    return fmt.wrap("Task order (benchmark.orders): an online learner's success in each seeded order of the task "
                    "stream; order 0 is the benchmark's own order.", "") + "\n" + "\n".join(blocks)
