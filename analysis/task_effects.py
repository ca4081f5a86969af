"""`make tables` / `make report`'s per-task section: which tasks each strategy helped and harmed against `none`
(analysis.statistics.harm), with the A/A noise floor beside Δ vs none (analysis.noise_floor), per row of the strategies
table.

`none`'s own row reads its trials split in halves: the harmed tasks that rule lists there are noise by
construction, and `chance` says how many to expect. Task ids link to the viewer's compare page in
task_effects.md and in the report (`make view` on the same runs, in the same order).
"""

from __future__ import annotations

import html
import math
from pathlib import Path

import pandas as pd

from analysis import fmt, noise_floor
from analysis.runs.corruption import corruption_column, split_label
from analysis.statistics import harm
from analysis.statistics.metrics import BASELINE, GROUP, with_assembly
from analysis.statistics.verdict import Verdict, harm_tail

READING = "reading"  # a hidden column: the line that reconciles the row's views (analysis.statistics.verdict)

SHOWN_IDS = 10
NOTE = ("helped / harmed: tasks whose success against none's changed beyond trial noise (" + harm.RULE + "); the "
        "none row: none against itself, trials split in halves. chance = harmed tasks trial noise alone would list "
        "if the strategy equalled none (docs/robustness.md). A/A ±: a strategy's row, the band for its difference "
        "from none (both cells' trials pooled per task and split at random, 95%); none's row, none against itself "
        "at its tasks x trials. Δ vs none: its verdict (analysis.statistics.verdict), the line below a row where views "
        "differ.")


def computed(result) -> tuple[list[harm.TaskEffects], pd.DataFrame]:
    """(every comparison against none, `frame`) of an analysis (tables.Analysis.per_task keeps them)."""
    found = harm.per_cell(result.records, result.exclude)
    return found, frame(result, found)


def frame(result, found: list[harm.TaskEffects]) -> pd.DataFrame:
    """One row per strategies-table row: Δ vs none with its verdict (analysis.statistics.verdict, the strategies
    table's own),
    the A/A band (a strategy's: the band for its difference from none; none's: its own), helped / harmed counts,
    chance, ids, and the reading line where the mean and the per-task or band view answer differently."""
    by_key = {(*map(str, e.cell), e.strategy.removesuffix(f" {harm.AA}")): e for e in found}
    summary = noise_floor.add_aa(result.summary, result.records, result.exclude)
    rows = []
    for _, r in with_assembly(summary).iterrows():
        e = by_key.get(tuple(str(r[c]) for c in GROUP))
        v = r.get("verdict") if isinstance(r.get("verdict"), Verdict) else aa_verdict(r, e)
        band = v.band_pts if r["strategy"] != BASELINE else r.get("aa_spread_pts")
        half = "" if e is None or r["strategy"] != BASELINE else f" ({e.trials}+{e.trials})"
        rows.append({**{c: r[c] for c in GROUP}, "tasks×k": f"{r['tasks']}×{r['trials']}{half}",
                     "Δ vs none": "-" if fmt.missing(r.get("Δsuccess_pts")) else
                     f"{fmt.points(r['Δsuccess_pts'])}{v.flag(short=True)}",
                     "A/A ±": "-" if fmt.missing(band) else f"±{band:.1f} pts",
                     "helped": "-" if e is None else len(e.helped), "harmed": "-" if e is None else len(e.harmed),
                     "chance": "-" if e is None else f"{e.chance:.1f}",
                     "harmed tasks": "-" if e is None or not e.harmed else _ids(list(e.harmed)),
                     READING: (v.aa_reading() if r["strategy"] == BASELINE else v.reconciling()) or ""})
    return pd.DataFrame(rows)


def aa_verdict(r: pd.Series, e: harm.TaskEffects | None) -> Verdict:
    """`none` against itself, its trials split in halves: the halves' difference beside its band at that size,
    and the harm list of that split beside its chance."""
    if e is None:
        return Verdict(math.nan)
    return Verdict(r.get("aa_observed_pts", math.nan), band_pts=r.get("aa_spread_half_pts", math.nan),
                   harmed=len(e.harmed), chance=e.chance, harm_p=harm_tail(e.chances, len(e.harmed)))


def readings(table: pd.DataFrame) -> list[str]:
    """'<strategy>: <reading>' for each row that has one."""
    named = [(split_label(r["strategy"]), r[READING]) for _, r in table.iterrows() if r.get(READING)]
    return [f"{bare}{f' ({rate})' if rate else ''}: {line}" for (bare, rate), line in named]


def _ids(ids: list[str]) -> str:
    return " ".join(ids[:SHOWN_IDS]) + (f" (+{len(ids) - SHOWN_IDS})" if len(ids) > SHOWN_IDS else "")


def display(table: pd.DataFrame) -> pd.DataFrame:
    shown = table.copy()
    shown["model"] = shown["model"].map(fmt.model_label)
    return corruption_column(fmt.drop_constant(shown.drop(columns=[READING])))


def write(result, out_dir: Path, viewer: str = harm.VIEWER_URL) -> list[Path]:
    """task_effects.md (the table, then every list with its compare links) and task_effects.csv."""
    found, table = result.per_task
    if table.empty:
        return []
    lines = harm.lines(found, viewer=viewer, limit=10_000)
    text = (display(table).to_markdown(index=False, disable_numparse=True) + "\n\n"
            + "".join(f"- {line}\n" for line in readings(table)) + "\n" + NOTE + "\n\n"
            + "Task lists (each id opens the viewer's compare page, none's episode beside the strategy's, at the "
              "first divergence; start `make view` on the same runs, in the same order):\n\n" + "\n".join(lines) + "\n")
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "task_effects.md").write_text(text, encoding="utf-8")
    harm.table(found).to_csv(out_dir / "task_effects.csv", index=False)
    return [out_dir / "task_effects.md", out_dir / "task_effects.csv"]


def terminal(result) -> str:
    table = result.per_task[1]
    if table.empty:
        return ""
    readings_lines = [fmt.wrap(line, "  ") for line in readings(table)]
    return "\n".join([fmt.plain(display(table)), *readings_lines, fmt.wrap(NOTE, "")])


def html_section(result, viewer: str = harm.VIEWER_URL) -> str:
    """The report's section: the table, then each comparison's harmed and helped tasks as compare links."""
    found, table = result.per_task
    if table.empty:
        return ""
    parts = ["<h2>Which tasks did memory help or harm?</h2>", display(table).to_html(index=False, border=0),
             *(f"<p>{html.escape(line)}</p>" for line in readings(table)), f"<p class=note>{html.escape(NOTE)}</p><ul>"]
    for e in found:
        items = []
        for name, tasks in (("harmed", e.harmed), ("helped", e.helped)):
            links = ", ".join(f"<a href='{html.escape(harm.compare_url(p, viewer), quote=True)}'>{html.escape(t)}</a>"
                              for t, p in tasks.items())
            items.append(f"{name} {len(tasks)}" + (f": {links}" if links else ""))
        parts.append(f"<li>{html.escape(f'{e.where} {e.strategy} vs {e.against}')} ({e.tasks} tasks x {e.trials} "
                     f"trials; chance {e.chance:.1f}): {'; '.join(items)}</li>")
    return "".join(parts) + "</ul>"

