"""The tables' cells as shown: one display frame per table (strategies, compact, models, pairs) built from
analysis.tables' summaries, with the error, scenario, USD, build-cost and Δ cells they share."""

from __future__ import annotations

import pandas as pd

from analysis import fmt
from analysis.runs.corruption import corruption_column
from analysis.runs.costs import usd
from analysis.statistics.verdict import Verdict
from analysis.statistics.metrics import BASELINE

SHORT = {"context_overflow": "ctx", "user_simulator": "user"}  # the rest print as their label


def strategies_display(summary: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for _, r in summary.iterrows():
        row = {"benchmark": r["benchmark"], "split": r["split"], "model": fmt.model_label(r["model"]),
               "strategy": r["strategy"] + (" *" if r["few_tasks"] else ""),
               "tasks": r["tasks"], "trials": r["trials"], "errors": errors_cell(r),
               "success": fmt.pct_ci(r["success"], r["success_lo"], r["success_hi"])}
        for k in range(2, int(r["trials"]) + 1):
            row[f"pass^{k}"] = fmt.pct_ci(r.get(f"pass^{k}"), r.get(f"pass^{k}_lo"), r.get(f"pass^{k}_hi"))
        if not fmt.missing(r.get("tgc")):
            row["TGC"] = fmt.pct_ci(r["tgc"], r["tgc_lo"], r["tgc_hi"], sign="")
            row["SGC"] = fmt.pct_ci(r["sgc"], r["sgc_lo"], r["sgc_hi"], sign="")
            row["scenarios"] = scenarios_cell(r)
        row.update({"Δ vs none": _delta(r), "tokens/task": fmt.kilo(r["tokens/task"]),
                    "Δtokens": "-" if r["strategy"] == BASELINE else fmt.signed_pct(r["Δtokens_%"]),
                    "prompt/task": fmt.kilo(r["prompt_tokens/task"]),
                    "cached/task": fmt.kilo(r["cached_tokens/task"]),
                    "cache write/task": fmt.kilo(r.get("cache_write_tokens/task")),
                    "completion/task": fmt.kilo(r["completion_tokens/task"]),
                    "memory/task": fmt.kilo(r["memory_tokens/task"]),
                    **_build(r),
                    "steps/task": "-" if fmt.missing(r["steps/task"]) else f"{r['steps/task']:.1f}",
                    **_usd(r)})  # USD/task = the compact table's cost; the agent's share: USD agent/task
        for name in ("cited steps", "updates lost"):  # ACE only (add_learning_counts)
            if not fmt.missing(r.get(name)):
                row[name] = str(int(r[name]))
        if not fmt.missing(r.get("answer_calls/task")) and r["answer_calls/task"] > 0:
            row["answer calls/task"] = f"{r['answer_calls/task']:.1f}"  # answer_mode=rebuild: in tokens too
        rows.append(row)
    shown = with_assembly(pd.DataFrame(rows), summary)
    passes = sorted((c for c in shown.columns if c.startswith("pass^")), key=lambda c: int(c[5:]))
    front = [c for c in shown.columns if c not in passes and c not in ("Δ vs none",)]
    at = front.index("success") + 1
    return corruption_column(shown[front[:at] + passes + ["Δ vs none"] + front[at:]].fillna("-"))


def compact_display(summary: pd.DataFrame) -> pd.DataFrame:
    """The end-of-sweep table, narrow enough for a terminal (<= 160 columns on a usual sweep): model, strategy,
    tasks x trials (k), errors, success [CI], the highest Pass^k, SGC where scored, Δ vs none with its flag, and
    tokens, memory tokens and cost per task (COMPACT_NOTE). `make tables` and `--wide` show every column."""
    cells = summary[["benchmark", "split"]].astype(str).agg("/".join, axis=1)
    rows = []
    for (_, r), cell in zip(summary.iterrows(), cells):
        row = {"benchmark/split": cell, "model": fmt.model_label(r["model"]).replace(" (SIMULATED)", ""),
               "strategy": r["strategy"] + (" *" if r["few_tasks"] else ""),
               "tasks×k": f"{r['tasks']}×{r['trials']}" + (f" {r['budget']}" if r.get("budget") else ""),
               "errors": errors_cell(r),
               "success": fmt.pct_ci(r["success"], r["success_lo"], r["success_hi"])}
        k = int(r["trials"])
        if k >= 2:
            row["pass^k"] = f"^{k} {fmt.pct(r.get(f'pass^{k}'))}"  # its CI: --wide
        if not fmt.missing(r.get("tgc")):
            row["SGC"] = fmt.pct_ci(r["sgc"], r["sgc_lo"], r["sgc_hi"], sign="")
        row.update({"Δ vs none": _delta(r, short=True), "tokens": fmt.kilo(r["tokens/task"]),
                    "memory": fmt.kilo(r["memory_tokens/task"]), "cost": usd(r.get("usd/task"))})
        rows.append(row)
    shown = pd.DataFrame(rows).fillna("-")
    if cells.nunique() == 1:  # one benchmark: said once above the table instead
        shown = shown.drop(columns="benchmark/split")
    return with_assembly(shown, summary)


COMPACT_NOTE = ("tasks×k = tasks × trials per task; pass^k at the highest k run; tokens, memory (the delivered "
                "memory's share of the prompt) and cost (USD: agent + user simulator + judge + the strategy's own "
                "calls) are per task, infra episodes' spending included; "
                "`--wide` (WIDE=1) shows every column, USD per successful task and by role among them.")


def errors_cell(r: pd.Series) -> str:
    """'ctx 3, agent 1, infra 2': records per error label in this cell, then an online learner's updates lost after
    their retries ('update lost 1': the episodes stand); '-' when there is neither."""
    counts = [(c[4:], r[c]) for c in r.index if c.startswith("err_") and not fmt.missing(r[c]) and r[c]]
    lost = r.get("updates_lost")
    counts += [("update lost", lost)] if not fmt.missing(lost) and lost else []
    return ", ".join(f"{SHORT.get(label, label)} {int(n)}" for label, n in counts) or "-"


def scenarios_cell(r: pd.Series) -> str:
    """'18' or '17 (+2 incomplete)': SGC is over the complete scenarios only."""
    done, cut = r.get("scenarios"), r.get("scenarios_incomplete")
    if fmt.missing(done):
        return "-"
    return f"{int(done)}" + (f" (+{int(cut)} incomplete)" if not fmt.missing(cut) and cut else "")


def scenario_warnings(summary: pd.DataFrame) -> list[str]:
    """One line per cell whose SGC had to leave scenarios out (a missing or --exclude'd task, e.g. a LIMIT cut)."""
    lines: list[str] = []
    if "scenarios_incomplete" not in summary:
        return lines
    for _, r in summary[summary["scenarios_incomplete"].fillna(0) > 0].iterrows():
        setting = f" [{r['assembly']}]" if isinstance(r.get("assembly"), str) and r["assembly"] else ""
        lines.append(f"warning: {r['benchmark']}/{r['split']}/{r['model']}/{r['strategy']}{setting}: SGC over "
                     f"{int(r['scenarios'])} complete scenarios; {int(r['scenarios_incomplete'])} incomplete "
                     "(a task with no record, e.g. a LIMIT that cut the scenario, or with an --exclude'd error)")
    return lines


def calling_roles(r: pd.Series) -> list[str]:
    """The roles beyond every episode's (analysis.runs.costs.called_roles) that made calls in this table row."""
    return [str(k)[len("usd_"):-len("/task")] for k in r.index
            if str(k).startswith("usd_") and r.get(f"{str(k)[4:-5]}_calls/task")]


def _usd(r: pd.Series) -> dict[str, str]:
    """USD per task (agent + user simulator + judge), per successful task, each role apart, and with the memory
    build amortised (analysis.runs.costs); a budget-stopped row says so."""
    row = {"USD/task": usd(r.get("usd/task")), "USD/success": usd(r.get("usd/success")),
           "USD agent/task": usd(r.get("usd_agent/task")), "USD user/task": usd(r.get("usd_user/task")),
           "USD judge/task": usd(r.get("usd_judge/task")), "USD+build/success": usd(r.get("usd+build/success"))}
    for role in calling_roles(r):  # a strategy that calls a model itself (ace_retrieval's LLM ranker), a learner...
        row[f"USD {role}/task"] = usd(r.get(f"usd_{role}/task"))
        row[f"{role} calls/task"] = f"{r[f'{role}_calls/task']:.2f} ({r[f'{role}_tokens/task']:,.0f} tokens)"
    if r.get("budget"):
        row["status"] = r["budget"]
    return row


def _build(r: pd.Series) -> dict[str, str]:
    """The one-off memory-building tokens and their share per task (analysis.runs.build_cost)."""
    if "build_tokens" not in r:
        return {}
    n = r.get("amortised_over")
    per = fmt.kilo(r["build_tokens/task"])
    return {"build (one-off)": fmt.kilo(r["build_tokens"]),
            "build/task": per if fmt.missing(n) else f"{per} (/{int(n)})"}


def with_assembly(shown: pd.DataFrame, source: pd.DataFrame) -> pd.DataFrame:
    """An `assembly` column after `model` when the runs varied placement / context policy / answer mode."""
    if "assembly" not in source or not (source["assembly"].fillna("") != "").any():
        return shown
    shown = shown.copy()
    shown.insert(list(shown.columns).index("model") + 1, "assembly", list(source["assembly"].fillna("")))
    return shown


def _delta(r: pd.Series, short: bool = False) -> str:
    if r["strategy"] == BASELINE or fmt.missing(r["Δsuccess_pts"]):
        return "-"
    verdict = r.get("verdict")  # analysis.statistics.verdict: the one rule the harm list and the A/A band read too
    flag = verdict.flag(short) if isinstance(verdict, Verdict) else ""
    pairs, base = r.get("Δpairs"), r.get("Δbase_records")
    most = max(r["records"], 0 if fmt.missing(base) else base)  # either row holding more: Δ is on fewer pairs
    fewer = f" on {int(pairs)} pairs" if not fmt.missing(pairs) and pairs < most else ""
    if short:
        return f"{fmt.points(r['Δsuccess_pts'])}{fewer}{flag}"
    return f"{fmt.points(r['Δsuccess_pts'])} ({fmt.signed_pct(r['Δsuccess_%'])}){fewer}{flag}"


def models_display(models: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for _, r in models.iterrows():
        best = r.get("best_strategy")
        rows.append({"benchmark": r["benchmark"], "split": r["split"],
                     "model": fmt.model_label(r["model"]) + (" *" if r["few_tasks"] else ""), "tasks": r["tasks"],
                     "trials": r["trials"], "none": fmt.pct_ci(r["none"], r["none_lo"], r["none_hi"]),
                     "best": fmt.pct_ci(r.get("best"), r.get("best_lo"), r.get("best_hi")),
                     "best strategy": (best + (f" ({r['best_rule']})" if isinstance(r.get("best_rule"), str)
                                               and r["best_rule"] else "")) if isinstance(best, str) else "-",
                     "Δ (paired)": fmt.points(r.get("Δ_pts"), r.get("Δ_lo"), r.get("Δ_hi")),
                     "p": fmt.pvalue(r.get("p")),
                     "tokens none → best": fmt.arrow(fmt.kilo(r["tokens_none"]), fmt.kilo(r.get("tokens_best")),
                                                     fmt.signed_pct(r.get("Δtokens_%")))
                     if isinstance(best, str) else "-"})
    return with_assembly(pd.DataFrame(rows), models)


def pairs_display(pairs: pd.DataFrame) -> pd.DataFrame:
    shown = pairs[["benchmark", "split", "model", "a", "b", "n"]].copy()
    shown["a − b"] = [fmt.points(d, lo, hi) for d, lo, hi in zip(pairs["diff_pts"], pairs["diff_lo"],
                                                                   pairs["diff_hi"])]
    shown["p"] = pairs["p"].map(fmt.pvalue)
    shown["test"] = pairs["test"]
    shown["n"] = [f"{n} *" if few else str(n) for n, few in zip(pairs["n"], pairs["few_tasks"])]
    return with_assembly(shown, pairs)


def markdown(df: pd.DataFrame) -> str:
    return df.to_markdown(index=False, disable_numparse=True) if len(df) else "(no rows)"
