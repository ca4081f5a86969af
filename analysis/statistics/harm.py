"""Which tasks did memory break? Per task, each strategy against `none` of the same cell: helped, harmed, unchanged.

Paired on the (task, trial) pairs both cells have. The rule (`RULE`):

* one trial per task: harmed = none succeeded and the strategy failed; helped = the reverse;
* two or more: the task's success rates r_s (strategy) and r_0 (none) over its trials differ beyond what trial
  noise explains: the one-sided two-proportion z-test (pooled rate), z = (r_s - r_0) / sqrt(p(1 - p)(1/n_s +
  1/n_0)) at or below -1.645 is harmed, at or above +1.645 helped (with 4 trials each: 4-0, 4-1 and 3-0 of
  successes; with 2 each: 2-0).

**Chance.** Were the two strategies equal, a task's trials would be exchangeable between them: given the task's
pooled successes, how many fall to each side is hypergeometric. `chance` sums, over tasks, the probability that
the rule flags the task harmed under that null: the harmed tasks expected from trial noise alone at this size.
The A/A check applies the same rule to `none` against itself, its trials split in halves (first half against
second), beside that split's own chance figure: the rule listing about as many as chance says is noise, not harm.

Each listed task carries a pair of episode ids (none's, the strategy's: the same trial, outcomes the other way
round) for the viewer's compare page (`make view` on the same runs, in the same order: its episode ids are the
records' positions as analysis.runs.load reads them).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import pandas as pd

from analysis.statistics.metrics import BASELINE, CELL, valid, with_assembly
from harness import infra_rates  # `where`: a cell's parts that are set, joined (plain definitions)

Z = 1.645  # one-sided 5 %
RULE = ("one trial: harmed = none succeeded and the strategy failed (helped: the reverse); more trials: the task's "
        f"success rates differ beyond trial noise (one-sided two-proportion z-test, |z| >= {Z})")
VIEWER_URL = "http://127.0.0.1:8765/"  # `make view`'s address, as analysis/report.py's links
AA = "(A/A)"  # the label's tail for none against itself, its trials split in halves


def flag(c_s: int, n_s: int, c_0: int, n_0: int) -> int:
    """+1 helped, -1 harmed, 0 unchanged: the rule for one task (c successes of n trials each side)."""
    if n_s == 1 and n_0 == 1:
        return c_s - c_0
    pooled = (c_s + c_0) / (n_s + n_0)
    if pooled in (0.0, 1.0):
        return 0
    z = (c_s / n_s - c_0 / n_0) / math.sqrt(pooled * (1 - pooled) * (1 / n_s + 1 / n_0))
    return 1 if z >= Z else -1 if z <= -Z else 0


def chance_harmed(c: int, n_s: int, n_0: int) -> float:
    """P(the rule says harmed) when the task's c successes of n_s + n_0 trials fall at random to the two sides."""
    total = math.comb(n_s + n_0, c)
    return sum(math.comb(n_s, x) * math.comb(n_0, c - x) for x in range(max(0, c - n_0), min(c, n_s) + 1)
               if flag(x, n_s, c - x, n_0) < 0) / total


def expected_chance(ps: list[float], trials: int) -> float:
    """Harmed tasks expected by chance for equal strategies whose tasks succeed with probabilities `ps`, at
    `trials` trials per side (the docs' table)."""
    total = 0.0
    for p in ps:
        for c_s in range(trials + 1):
            for c_0 in range(trials + 1):
                if flag(c_s, trials, c_0, trials) < 0:
                    total += (math.comb(trials, c_s) * p ** c_s * (1 - p) ** (trials - c_s)
                              * math.comb(trials, c_0) * p ** c_0 * (1 - p) ** (trials - c_0))
    return total


@dataclass
class TaskEffects:
    """One strategy against `none` in one cell, task by task."""

    cell: tuple
    strategy: str
    tasks: int
    trials: int  # the fewest paired trials of a task
    helped: dict[str, tuple[int, int]] = field(default_factory=dict)  # task -> (none episode, strategy episode)
    harmed: dict[str, tuple[int, int]] = field(default_factory=dict)
    chance: float = float("nan")  # harmed tasks expected by trial noise alone
    chances: tuple[float, ...] = ()  # each task's chance of being listed harmed (their sum: `chance`)

    @property
    def unchanged(self) -> int:
        return self.tasks - len(self.helped) - len(self.harmed)

    @property
    def where(self) -> str:
        """'tau2_retail/test/gpt-4.1': the cell's parts that are set."""
        return infra_rates.where(self.cell)

    @property
    def against(self) -> str:
        """What the strategy was compared with: none, or (the A/A check) none's first half of trials."""
        return f"{BASELINE} (first half of trials)" if self.strategy.endswith(AA) else BASELINE


def _sorted_ids(ids) -> list[str]:
    return sorted(ids, key=lambda t: (not str(t).isdigit(), int(t) if str(t).isdigit() else 0, str(t)))


def compare(mine: pd.DataFrame, base: pd.DataFrame, cell: tuple = (), strategy: str = "") -> TaskEffects:
    """`mine` against `base` (valid records of one cell each; index = episode ids), paired on (task, trial)."""
    a = mine.assign(task_id=mine["task_id"].astype(str), episode=mine.index)
    b = base.assign(task_id=base["task_id"].astype(str), episode=base.index)
    both = a.merge(b, on=["task_id", "trial"], suffixes=("_s", "_0"))
    out = TaskEffects(cell, strategy, both["task_id"].nunique(),
                      int(both.groupby("task_id").size().min()) if len(both) else 0, chance=0.0)
    for task, g in both.groupby("task_id", sort=False):
        n, c_s, c_0 = len(g), int(g["success_s"].sum()), int(g["success_0"].sum())
        verdict = flag(c_s, n, c_0, n)
        out.chances += (chance_harmed(c_s + c_0, n, n),)
        if verdict:
            turned = g[g["success_s"] != g["success_0"]]
            turned = turned[turned["success_s"] == (verdict > 0)]
            out_map = out.helped if verdict > 0 else out.harmed
            out_map[task] = (int(turned["episode_0"].iloc[0]), int(turned["episode_s"].iloc[0]))
    out.chance = float(sum(out.chances))
    out.helped = {t: out.helped[t] for t in _sorted_ids(out.helped)}
    out.harmed = {t: out.harmed[t] for t in _sorted_ids(out.harmed)}
    return out


def halves(df: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A cell's records split by trial: each task's first half of trials, and the rest, renumbered from 0 so the
    two halves pair trial by trial. Tasks with fewer than two trials are left out."""
    df = df.assign(task_id=df["task_id"].astype(str))
    rank = df.groupby("task_id")["trial"].rank(method="first").astype(int) - 1
    size = df.groupby("task_id")["trial"].transform("size")
    keep = size >= 2
    first = keep & (rank < size // 2)
    second = keep & (rank >= size // 2)
    return (df[first].assign(trial=rank[first]),
            df[second].assign(trial=rank[second] - (size[second] // 2)))


def per_cell(records: pd.DataFrame, exclude: tuple[str, ...] = ()) -> list[TaskEffects]:
    """Every strategy against `none` of its cell, and `none` against itself split by trials (strategy
    'none (A/A)'; only where `none` has two or more trials)."""
    out = []
    ok = with_assembly(valid(records, exclude))
    for key, cell in ok.groupby(CELL, sort=False, dropna=False):
        frames = dict(tuple(cell.groupby("strategy", sort=False)))
        base = frames.get(BASELINE)
        if base is None:
            continue
        for strategy, df in frames.items():
            if strategy != BASELINE:
                out.append(compare(df, base, key, strategy))
        first, second = halves(base)
        if len(first):
            out.append(compare(second, first, key, f"{BASELINE} {AA}"))
    return out


def compare_url(pair: tuple[int, int], viewer: str = VIEWER_URL) -> str:
    """The viewer's compare page for one task: none's episode (A) beside the strategy's (B), at the first divergence."""
    return f"{viewer}compare?a={pair[0]}&b={pair[1]}#divergence"


def table(effects: list[TaskEffects]) -> pd.DataFrame:
    """One row per comparison: counts, the chance figure, and the task ids (CSV and the display)."""
    rows = []
    for e in effects:
        rows.append({**dict(zip(CELL, e.cell)), "strategy": e.strategy, "tasks": e.tasks, "trials": e.trials,
                     "helped": len(e.helped), "harmed": len(e.harmed), "unchanged": e.unchanged,
                     "chance_harmed": e.chance, "helped_ids": " ".join(e.helped), "harmed_ids": " ".join(e.harmed)})
    return pd.DataFrame(rows, columns=[*CELL, "strategy", "tasks", "trials", "helped", "harmed", "unchanged",
                                       "chance_harmed", "helped_ids", "harmed_ids"])


def lines(effects: list[TaskEffects], viewer: str | None = None, limit: int = 12) -> list[str]:
    """Markdown lines: per comparison, the counts and the harmed / helped task ids (linked when `viewer`)."""
    out = []
    for e in effects:
        head = (f"- {e.where} {e.strategy} vs {e.against} "
                f"({e.tasks} tasks x {e.trials} trials): helped {len(e.helped)}, harmed {len(e.harmed)}, unchanged "
                f"{e.unchanged}; harmed by chance alone: {e.chance:.1f} expected")
        out.append(head)
        for name, tasks in (("harmed", e.harmed), ("helped", e.helped)):
            if tasks:
                shown = [f"[{t}]({compare_url(p, viewer)})" if viewer else t for t, p in list(tasks.items())[:limit]]
                more = f" (+{len(tasks) - limit} more)" if len(tasks) > limit else ""
                out.append(f"  - {name}: {', '.join(shown)}{more}")
    return out

