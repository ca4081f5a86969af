"""The control arms read together (docs/controls.md): what part of memory's effect is its content, its length and
its instruction.

Per (benchmark, split, model, assembly) cell whose records carry a control arm (the row's `control_arm`, written
by the arm itself: `placebo:<reference>` or `protocol_only`), each effect is PAIRED on the (task, trial) pairs
both of its cells have, with the paired bootstrap CI over tasks the pairs table uses (analysis.statistics.stats.paired):

    content     = <reference> - placebo   (the design the placebo was length-matched to: full, reasoning_bank, ...)
    length      = placebo - none
    instruction = protocol_only - none    (protocol_only:<design>: that design's frame, no content)

and the placebo's memory tokens per episode beside its reference's (the match it rests on), and `on_demand`'s
success and memory tokens beside full's when an `on_demand` cell is present. A control arm is a measurement,
never a deployment: `make recommend` leaves it out of the candidates (analysis.recommend) and the plots draw it
hollow, outside the Pareto front (analysis.views.plots). A cell whose designs (not control arms) introduce their
memory in different words (the rows' `memory_instruction`) says so in a line: a head-to-head difference there
mixes content with instruction, which `frame: neutral` takes out (strategies/frame.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from analysis import fmt
from analysis.statistics import stats
from analysis.statistics.metrics import BASELINE, CELL, EXCLUDED, key_of, on_common_pairs, per_task_means, \
    task_success, valid, with_assembly, with_tokens
from analysis.views.pulls import pull_rate

COLUMN = "control_arm"  # harness/row.py
PLACEBO, PROTOCOL = "placebo", "protocol_only"
PULL = "on_demand"  # the pull-delivery strategy whose figures stand beside full's
INSTRUCTION = "memory_instruction"  # harness/row.py: the instruction a framed design's block carries


def arms(records: pd.DataFrame) -> dict[str, str]:
    """strategy -> its control arm (`placebo:full`, `protocol_only`), for the strategies whose rows say so."""
    if COLUMN not in records or records.empty:
        return {}
    marked = records[records[COLUMN].notna()]
    return {str(s): ",".join(sorted(set(g[COLUMN].astype(str)))) for s, g in marked.groupby("strategy")}


def is_control(records: pd.DataFrame) -> pd.Series:
    """Per record: whether its strategy is a control arm (any of its rows carries `control_arm`)."""
    return records["strategy"].astype(str).isin(set(arms(records)))


def mark(summary: pd.DataFrame, records: pd.DataFrame) -> pd.DataFrame:
    """The summary with a `control_arm` column (None for a strategy that is not one), for plots and readers."""
    found = arms(records)
    return summary.assign(**{COLUMN: [found.get(str(s)) for s in summary["strategy"]]}) if len(summary) else summary


@dataclass(frozen=True)
class Effect:
    name: str  # content | length | instruction
    a: str  # the effect is a - b
    b: str
    result: stats.PairedResult
    pairs: int  # (task, trial) pairs both cells have

    def line(self, aligned: bool = True) -> str:
        """`name = a - b  +x pts [lo, hi]  on N tasks x T trials`, in columns for a terminal (`aligned`)."""
        r, arms, gap = self.result, f"{self.a} - {self.b}", "  " if aligned else " "
        name, arms = (f"{self.name:<11}", f"{arms:<22}") if aligned else (self.name, arms)
        if r.n == 0:
            return f"{name} = {arms.strip()}: no shared (task, trial) pairs"
        trials = f" x {self.pairs // r.n} trials" if self.pairs % r.n == 0 else f" ({self.pairs} pairs)"
        return (f"{name} = {arms} {fmt.points(100 * r.diff, 100 * r.lo, 100 * r.hi)}{gap}on {r.n} tasks{trials}"
                + (f"{gap}(* fewer than 20 tasks)" if r.few_tasks else ""))


def _effect(name: str, a: str, b: str, cells: dict[str, pd.DataFrame], n_boot: int) -> Effect:
    on_a, on_b = on_common_pairs(cells[a], cells[b])
    return Effect(name, a, b, stats.paired(task_success(on_a), task_success(on_b), n_boot=n_boot), len(on_a))


def _memory(frame: pd.DataFrame) -> set[str]:
    return set(frame["memory"].dropna().astype(str)) if "memory" in frame else set()


def _tokens(frame: pd.DataFrame) -> float:
    return per_task_means(frame)["memory_tokens/task"]


def _change(mine: float, theirs: float) -> str:
    return fmt.signed_pct(100 * (mine / theirs - 1)) if theirs else "-"


def _length_match(placebo: str, ref: str, mine: pd.DataFrame, theirs: pd.DataFrame) -> list[str]:
    """The placebo's memory tokens beside its reference's: per agent step (what it matches: each delivery) and
    per episode (which also moves with the outcome, as an episode's steps do)."""
    per_step = [float(f["memory_tokens"].sum() / f["steps"].sum()) if "steps" in f and f["steps"].sum() else
                float("nan") for f in (mine, theirs)]
    per_episode = [_tokens(mine), _tokens(theirs)]
    said = [f"length match: `{placebo}` {fmt.kilo(per_step[0])} memory tokens per agent step vs `{ref}` "
            f"{fmt.kilo(per_step[1])} ({_change(*per_step)}); per episode {fmt.kilo(per_episode[0])} vs "
            f"{fmt.kilo(per_episode[1])} ({_change(*per_episode)}), on the same pairs"]
    if per_step[1] > 0 and not per_step[0] >= 0.8 * per_step[1]:  # an online design's block grew; its copy did not
        said.append(f"length match: `{placebo}` matches {ref}'s starting block (its copy never learns); "
                    f"`strategy.options.length_tokens={round(per_step[1])}` matches this run's per-step length")
    return said


def decomposition(cell: pd.DataFrame, found: dict[str, str], n_boot: int = stats.N_BOOT) -> tuple[list[Effect],
                                                                                                   list[str]]:
    """One cell's (valid records) effects, and the lines said beside them (the length match, on_demand, why an
    effect is missing); nothing when it holds no control arm."""
    cells = dict(tuple(cell.groupby("strategy", sort=False)))
    here = {s: a for s, a in found.items() if s in cells}
    out: list[str] = []
    effects: list[Effect] = []
    if not here:
        return effects, out
    placebos = [s for s, a in here.items() if a.startswith(f"{PLACEBO}:")]
    for s in placebos:
        ref = here[s].split(":", 1)[1]
        if "," in ref or ref not in cells:
            out.append(f"content: `{s}` matches {ref}, which this cell lacks as one strategy: no content effect")
        elif _memory(cells[s]) != _memory(cells[ref]):
            out.append(f"content: `{s}` and `{ref}` read different memory ({', '.join(sorted(_memory(cells[s])))} vs "
                       f"{', '.join(sorted(_memory(cells[ref])))}): not comparable")
        else:
            effects.append(_effect("content", ref, s, cells, n_boot))
            out += _length_match(s, ref, *on_common_pairs(cells[s], cells[ref]))
        if BASELINE in cells:
            effects.append(_effect("length", s, BASELINE, cells, n_boot))
    for s in (s for s, a in here.items() if a == PROTOCOL or a.startswith(f"{PROTOCOL}:")):
        design = here[s].split(":", 1)[1] if ":" in here[s] else "full"  # a run before designs had frames: full's
        if BASELINE in cells:
            effects.append(_effect("instruction", s, BASELINE, cells, n_boot))
        matched = {a.split(":", 1)[1] for a in (here[p] for p in placebos)}
        if design != "full" or matched - {design}:
            out.append(f"instruction: `{s}` delivers {design}'s frame" + (
                f"; the placebo matches {', '.join(sorted(matched))}" if matched - {design} else ""))
    if PULL in cells and "full" in cells:
        pull, full = on_common_pairs(cells[PULL], cells["full"])
        out.append(f"{PULL}: success {fmt.pct(task_success(pull).mean())} at {fmt.kilo(_tokens(pull))} memory "
                   f"tokens/episode; full {fmt.pct(task_success(full).mean())} at {fmt.kilo(_tokens(full))} "
                   f"({len(pull)} shared pairs)")
        rate = pull_rate(cells[PULL])
        out.append(f"{PULL}: {rate.figures()}" + ("; the memory was never pulled" if not rate.pulled else ""))
    return effects, out


def wording(cell: pd.DataFrame, found: dict[str, str]) -> list[str]:
    """A line when the cell's designs (control arms aside) carry different instructions: comparing them head to
    head mixes what their memory says with how it is introduced."""
    if INSTRUCTION not in cell:
        return []
    said = cell[~cell["strategy"].astype(str).isin(set(found))].dropna(subset=[INSTRUCTION])
    by = {str(s): str(g[INSTRUCTION].iloc[0]) for s, g in said.groupby("strategy", sort=False)}
    if len(set(by.values())) < 2:
        return []
    quoted = "; ".join(f"`{s}` {_quote(text)}" for s, text in by.items())
    return [f"instruction wording differs between designs ({quoted}): a head-to-head difference mixes content "
            "with instruction; `strategy.options.frame=neutral` gives them one"]


def _quote(text: str, width: int = 40) -> str:
    return '"' + (text if len(text) <= width else text[: width - 3] + "...") + '"' if text else "(none)"


def cell_lines(cell: pd.DataFrame, found: dict[str, str], n_boot: int = stats.N_BOOT,
               aligned: bool = True) -> list[str]:
    """The decomposition of one cell, one line each, and the instruction-wording line; [] when it has neither."""
    effects, said = decomposition(cell, found, n_boot)
    return [e.line(aligned) for e in effects] + said + wording(cell, found)


def terminal(records: pd.DataFrame, exclude: tuple[str, ...] = EXCLUDED, n_boot: int = stats.N_BOOT) -> str:
    """Every cell's decomposition under a title line ('' when no cell holds a control arm or differing wording)."""
    found = arms(records)
    if not found and INSTRUCTION not in records:
        return ""
    ok = with_assembly(with_tokens(valid(records, exclude)))
    blocks = []
    for key, cell in ok.groupby(CELL, sort=False, dropna=False):
        if lines := cell_lines(cell, found, n_boot):
            where = "/".join(v for v in key_of(key) if v)
            blocks.append(fmt.wrap(f"{where}:\n" + "\n".join(f"  {line}" for line in lines), "    "))
    if not blocks:
        return ""
    title = ("Control arms (docs/controls.md): each effect paired on the (task, trial) pairs both arms have, "
             "[95% paired bootstrap CI over tasks]" if found else "Memory frames (docs/controls.md):")
    return title + "\n" + "\n".join(blocks)


def sentence(cell: pd.DataFrame, exclude: tuple[str, ...] = EXCLUDED) -> str:
    """For `make recommend`: the cell's control arms, why they are not candidates, and the decomposition."""
    found = arms(cell)
    if not found:
        return ""
    lines = cell_lines(with_assembly(with_tokens(valid(cell, exclude))), found, aligned=False)
    names = ", ".join(f"`{s}`" for s in found)
    return (f"Control arms, never recommended ({names}; docs/controls.md): " + "; ".join(lines) + "."
            if lines else f"Control arms, never recommended: {names}.")
