"""IBM reproduction views: IBM's published rows beside our measured rows, each clearly labelled.

Published figures live in `analysis/published/ibm.csv` (one row per published number, with its source and the
exact text the source printed, in `display`). A view is named by an experiment config
(`configs/experiment/<name>.yaml`, key `analysis`), which maps IBM's model labels to the LiteLLM names we ran.
Published rows are labelled "published (source)"; measured rows "measured (run, n=tasks, trials=k)".
A published value we computed ourselves (e.g. the midpoint of a range) has a non-empty `derived` column saying how,
and its row reads "published (source), derived". Rows whose source is not one of the seeds' articles cite their
public source (a GitHub issue / pull request) and carry its caveats in `note`.
A measured cell under a Pass^k label is that Pass^k or "n/a (trials < k)", never another rate.
Like is paired with like: a published row with a `delivery` (IBM's "support≥3" = core only; "core+retrieval")
gets a measured value only from `core_retrieval` jobs whose run config says they delivered the same
(analysis/runs/deliveries.py: top_k 0 = core only); otherwise its cell says what ours delivered, or that no config.yaml
said. A strategy shown with a provenance label (`full [unknown provenance]`) is paired under its own name, the label
kept in the note.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import yaml

from analysis import fmt
from analysis.runs.deliveries import base_strategy, deliveries, kind
from analysis.statistics.metrics import BASELINE, GROUP
from analysis.views.compare import best_rows

ROOT = Path(__file__).resolve().parents[2]  # analysis/views/ibm.py -> the checkout
PUBLISHED = ROOT / "analysis" / "published" / "ibm.csv"
EXPERIMENTS = ROOT / "configs" / "experiment"
RATE_METRICS = ("tgc", "sgc", "success")


def load_published(path: str | Path = PUBLISHED) -> pd.DataFrame:
    return pd.read_csv(path, dtype={"display": str, "setting": str, "model": str, "derived": str,
                                   "strategy": str, "delivery": str},
                       keep_default_na=False,
                       na_values={"value": [""], "guidelines": [""]})


def experiment_analysis(name: str, experiments_dir: str | Path = EXPERIMENTS) -> dict:
    """The `analysis` block of an experiment config, read as plain YAML (analysis never composes via Hydra)."""
    path = Path(experiments_dir) / f"{name}.yaml"
    if not path.is_file():
        raise FileNotFoundError(f"no experiment config {path}")
    block = (yaml.safe_load(path.read_text(encoding="utf-8")) or {}).get("analysis")
    if not block or "view" not in block:
        raise ValueError(f"{path}: needs an `analysis:` block with `view:`")
    return block


def short_source(source: str) -> str:
    """'... https://huggingface.co/blog/ibm-research/altk-evolve-hmm' -> 'IBM blog altk-evolve-hmm';
    '... https://github.com/AgentToolkit/altk-evolve/issues/316 ...' -> 'altk-evolve issue 316'."""
    for word in source.split():
        if word.startswith("https://github.com/"):
            parts = word.rstrip("/").split("/")  # https: '' github.com owner repo kind number
            kind = {"issues": "issue", "pull": "PR"}.get(parts[5], parts[5]) if len(parts) > 6 else "repo"
            return f"{parts[4]} {kind} {parts[6]}" if len(parts) > 6 else parts[4]
        if word.startswith("http"):
            return f"IBM blog {word.rstrip('/').rsplit('/', 1)[-1]}"
    return source.split(",")[0] if "pull request" not in source else "IBM tau2-bench PR"


def _published_cell(row: pd.Series) -> str:
    return row["display"]


def _measured_cell(metric: str, s: pd.Series, base: pd.Series | None) -> str:
    if metric in RATE_METRICS or metric.startswith("pass^"):
        col = metric
        if fmt.missing(s.get(metric)):  # never another rate under this label
            if metric.startswith("pass^"):
                return f"n/a (trials < {metric[5:]})"
            if metric == "sgc":
                return "n/a (no complete scenario)"
            col = "success"  # TGC is the mean task success by definition
        sign = "" if metric in ("tgc", "sgc") else "%"
        return fmt.pct_ci(s.get(col), s.get(f"{col}_lo"), s.get(f"{col}_hi"), sign=sign)
    if metric == "tokens_per_task":
        return fmt.kilo(s.get("tokens/task"))
    if metric == "steps_per_task":
        return "-" if fmt.missing(s.get("steps/task")) else f"{s['steps/task']:.1f}"
    if metric == "tokens_delta_pct":
        return fmt.signed_pct(s.get("Δtokens_%"))
    if metric == "cost_delta_pct":
        if base is None or fmt.missing(s.get("cost_usd/task")) or not base.get("cost_usd/task"):
            return "n/a"
        return fmt.signed_pct(100 * (s["cost_usd/task"] / base["cost_usd/task"] - 1))
    raise ValueError(f"unknown published metric {metric!r}")


def _measured_rows(summary: pd.DataFrame, pub: pd.Series, model: str | None) -> list[pd.Series]:
    """Our rows for a published one: its strategy, also when shown with a provenance label (one row each)."""
    if model is None or summary.empty:
        return []
    cell = summary[(summary["benchmark"] == pub["benchmark"]) & (summary["split"] == pub["split"])
                   & (summary["model"] == model)]
    if pub["strategy"]:
        hit = cell[cell["strategy"].map(base_strategy) == pub["strategy"]]
    else:  # IBM's "best" without a named setting: our best non-`none` strategy
        hit = best_rows(cell, include_baseline=False)
    return [row for _, row in hit.iterrows()]


def _delivery_mismatch(pub: pd.Series, m: pd.Series, delivered: dict[tuple, set]) -> tuple[str, str] | None:
    """(cell, note) when the published row names a delivery our row did not (or cannot be shown to) match."""
    want = str(pub.get("delivery") or "")
    if not want:
        return None
    ours = delivered.get(tuple(m.get(c, "") for c in GROUP), {None})
    if None not in ours and {kind(d) for d in ours} == {want}:
        return None
    if None in ours:
        return "n/a: top_k unknown", f"its run has no config.yaml giving its top_k; IBM's row is {want}"
    fix = "strategy=core_only (top_k 0)" if want.startswith("core only") else "strategy=core_retrieval (top_k > 0)"
    return (f"n/a: ours {' / '.join(sorted({kind(d) for d in ours}))}",
            f"delivered {', '.join(sorted(ours))}, not IBM's {want}; to compare, run {fix}")


def view(name: str, summary: pd.DataFrame | None = None, published: pd.DataFrame | None = None,
         experiments_dir: str | Path = EXPERIMENTS, models: dict[str, str] | None = None,
         records: pd.DataFrame | None = None) -> pd.DataFrame:
    """Long table: per published number, the published row and (when we ran it) our measured row beneath it.

    `models` (IBM label -> our model name; "*" = any label) adds to / replaces the experiment's own mapping.
    `records` (load_records) locate the runs' config.yaml: without them a row that needs a delivery
    (core only / core + retrieval) shows none of our values, as nothing says what ours delivered.
    """
    block = experiment_analysis(name, experiments_dir)
    published = load_published() if published is None else published
    pub = published[published["view"] == block["view"]]
    if pub.empty:
        raise ValueError(f"no published rows for view {block['view']!r} in {PUBLISHED}")
    models = {**(block.get("models") or {}), **(models or {})}
    summary = pd.DataFrame() if summary is None else summary
    delivered = deliveries(records)
    rows = []
    for _, p in pub.iterrows():
        key = {"benchmark": p["benchmark"], "split": p["split"], "model": p["model"], "setting": p["setting"],
               "metric": p["metric"]}
        derived = ", derived" if str(p.get("derived") or "").strip() else ""
        rows.append({"row": f"published ({short_source(p['source'])}){derived}", **key, "value": _published_cell(p),
                     "n": p["tasks"], "note": p["note"]})
        ours = models.get(p["model"]) or models.get("*")
        for m in _measured_rows(summary, p, ours):
            base = summary[(summary["benchmark"] == m["benchmark"]) & (summary["split"] == m["split"])
                           & (summary["model"] == m["model"]) & (summary["strategy"] == BASELINE)]
            runs = m.get("runs") if isinstance(m.get("runs"), str) else "?"
            mismatch = _delivery_mismatch(p, m, delivered)
            value = mismatch[0] if mismatch else _measured_cell(p["metric"], m, base.iloc[0] if len(base) else None)
            strategy = f"{m['strategy']}, {p['delivery']}" if p.get("delivery") and not mismatch else m["strategy"]
            rows.append({"row": f"measured ({runs}, n={m['tasks']}, trials={m['trials']})", **key, "value": value,
                         "n": m["tasks"], "note": f"strategy={strategy} model={m['model']}"
                         + (f" [{m['assembly']}]" if m.get("assembly") else "")
                         + (" (few tasks)" if m.get("few_tasks") else "") + (f": {mismatch[1]}" if mismatch else "")})
    return pd.DataFrame(rows)


def terminal(table: pd.DataFrame, width: int = 160) -> str:
    """The view for a terminal: a column with one value throughout is said once above the table, and each
    distinct note once, numbered under it and wrapped to `width` (the .md/.csv files keep every column)."""
    if table.empty:
        return "(no rows)"
    same = [c for c in table.columns if c != "note" and table[c].astype(str).nunique() == 1]
    notes = list(dict.fromkeys(n for n in table["note"] if isinstance(n, str) and n))
    ref = {n: f"[{i}]" for i, n in enumerate(notes, start=1)}
    shown = table.drop(columns=same).assign(note=table["note"].map(lambda n: ref.get(n, "")))
    above = ["same in every row: " + "; ".join(f"{c} {table[c].iloc[0]}" for c in same)] if same else []
    foot = ["\n".join(fmt.lines(f"{ref[n]} {n}", width, "    ")) for n in notes]
    return "\n".join([*above, shown.to_markdown(index=False, disable_numparse=True), *foot])


def token_lines(table: pd.DataFrame) -> list[str]:
    """IBM's token statements: '<model> <setting>: 110K → 166K (+51%)', published and measured alike."""
    lines = []
    for (row, bench, model), g in table.groupby(["row", "benchmark", "model"], sort=False):
        tokens = g[g["metric"] == "tokens_per_task"].set_index("setting")["value"]
        deltas = g[g["metric"] == "tokens_delta_pct"].set_index("setting")["value"]
        before = next((v for s, v in tokens.items() if s.startswith("none")), None)
        for setting, after in tokens.items():
            if setting.startswith("none") or before is None:
                continue
            change = deltas.get(setting)
            if change is None:  # the source gave no rounded change: we show none (computing it would be ours)
                lines.append(f"{row}: {bench} {model} tokens/task none → {setting}: {before} → {after}")
            else:
                lines.append(f"{row}: {bench} {model} tokens/task none → {setting}: {fmt.arrow(before, after, change)}")
    return lines


def sources(name: str, published: pd.DataFrame | None = None) -> list[str]:
    block = experiment_analysis(name)
    published = load_published() if published is None else published
    pub = published[published["view"] == block["view"]]
    return [f"{short_source(s)}: {s}" for s in dict.fromkeys(pub["source"])]
