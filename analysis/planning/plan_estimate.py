"""The token estimates behind `make plan` (analysis/plan.py): the prior, a pilot's figures carried to the planned
tasks, the memory block counted from the artifact, and USD per role (strategies/prices.py). Pure: no I/O but
reading the memory artifact."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import pandas as pd

from analysis.statistics.metrics import BASELINE
from strategies.prices import Price

# The prior per benchmark family. tau2: measured with the scripted oracle on tau2_retail test, 20 tasks (docs/cost.md):
# steps = steps_per_gold x gold actions + steps_fixed; agent prompt at step i (0-based) = first_prompt + growth x i
# (tokens, memory excluded); completion per agent step; user simulator prompt / completion per episode. The judge
# and AppWorld figures are NOT measured (no keyless run has them): rough guesses, labelled so in the plan.
PRIORS: dict[str, dict[str, Any]] = {
    "tau2": {"steps_per_gold": 1.0, "steps_fixed": 1.0, "first_prompt": 1525.0, "growth": 370.0,
             "completion": 47.0, "user_prompt": 870.0, "user_completion": 16.0, "judge_prompt": 1500.0,
             "judge_completion": 150.0, "gold_default": 6.0, "label": "prior (oracle-measured, gold actions)"},
    "appworld": {"steps_per_gold": 1.0, "steps_fixed": 10.0, "first_prompt": 6000.0, "growth": 500.0,
                 "completion": 250.0, "user_prompt": 0.0, "user_completion": 0.0, "judge_prompt": 0.0,
                 "judge_completion": 0.0, "gold_default": 15.0, "label": "prior (UNMEASURED guess)"},
}
PRIOR_BAND = 2.0  # the prior is stated as [estimate / 2, estimate x 2]
# `make memory` on train: one `none` episode per train task, then extraction and consolidation calls
EXTRACT_PER_TASK = {"prompt": 4000.0, "completion": 400.0}
FIELDS = ("prompt", "cached", "completion", "user_prompt", "user_cached", "user_completion", "judge_prompt",
          "judge_completion")


class PlanError(ValueError):
    pass


def base_name(label: str) -> str:
    """The strategy of a table label: `full [unknown provenance]` and `ace (no GT)` plan as full and ace."""
    return str(label).split(" ", 1)[0]


def family(benchmark: str) -> str:
    return "appworld" if benchmark.startswith("appworld") else "tau2"


# ---------------------------------------------------------------------------------------------- memory blocks


def memory_block_tokens(strategy: str, memory: Optional[str], model: str, options: dict[str, Any]) -> tuple[float, str]:
    """Tokens of the block the strategy delivers at a step, counted from the artifact (strategies' own
    rendering): none 0; full every guideline; core_retrieval the core plus top_k of the rest (their mean
    length); ace the playbook as it starts. Another strategy: the full block, as an upper bound."""
    if strategy == BASELINE:
        return 0.0, "no memory"
    if strategy == "dynamic_cheatsheet":  # reads no artifact: its cheatsheet starts "(empty)" and grows online
        from strategies.budget import token_counter as counter
        from strategies.cheatsheet import EMPTY_CHEATSHEET

        return float(counter(model)(f"<cheatsheet>\n{EMPTY_CHEATSHEET}\n</cheatsheet>")), \
            "the (empty) cheatsheet it starts from (it grows online; its curator calls are not in this estimate)"
    if strategy == "awm_online":  # reads no artifact: no workflows until its first judged success
        return 0.0, "no workflows at first (they are induced online; its judge and induction calls are not in this " \
            "estimate)"
    if not memory or not Path(memory).is_file():
        return 0.0, "no artifact yet"
    from strategies import render_guidelines
    from strategies.budget import token_counter
    from strategies import load_memory
    from strategies.memory_file import read_playbook_or_guidelines

    count = token_counter(model)
    if strategy == "ace":
        playbook, _ = read_playbook_or_guidelines(memory)
        return float(count(playbook.render())), "ACE playbook as it starts (it grows online)"
    guidelines, _ = load_memory(memory)
    if strategy in ("exp_rag", "long_context"):  # an experiences artifact (strategies/experiences.py)
        from strategies.experiences import render_experiences

        top_k = int(options.get("top_k", 4)) if strategy == "exp_rag" else len(guidelines)
        by_length = sorted(guidelines, key=lambda g: len(g.text))
        start = max(0, len(by_length) // 2 - top_k // 2)  # median-length ones stand for what retrieval picks
        picked = by_length[start:start + top_k] if strategy == "exp_rag" else guidelines
        return float(count(render_experiences(picked))), (f"top_k {len(picked)} experiences"
                                                          if strategy == "exp_rag" else "every experience")
    if strategy == "reasoning_bank":  # the top_k median-sized past tasks' items (strategies/reasoning_bank.py)
        from strategies.reasoning_bank import render_bank

        groups: dict[str, list] = {}
        for g in guidelines:
            groups.setdefault(g.id.rsplit("-", 1)[0], []).append(g)
        tasks = sorted(groups.values(), key=lambda items: sum(len(g.text) for g in items))
        top_k = int(options.get("top_k", 1))
        start = max(0, len(tasks) // 2 - top_k // 2)
        picked = [g for items in tasks[start:start + top_k] for g in items]
        return float(count(render_bank(picked))), (f"top_k {top_k} past tasks' items; it grows online (its judge "
                                                   "and extractor calls per episode are not in this estimate)")
    if strategy == "core_retrieval":
        core_support, min_support = int(options.get("core_support", 3)), int(options.get("min_support", 1))
        top_k = int(options.get("top_k", 10))
        kept = [g for g in guidelines if g.support >= min_support]
        core = [g for g in kept if g.support >= core_support]
        pool = sorted((g for g in kept if g.support < core_support), key=lambda g: len(g.text))
        if pool and top_k:  # the median-length ones stand for whatever retrieval picks
            start = max(0, len(pool) // 2 - top_k // 2)
            picked = pool[start:start + top_k]
        else:
            picked = []
        return float(count(render_guidelines(core + picked))), f"core {len(core)} + top_k {len(picked)}"
    note = "every guideline" if strategy == "full" else "full block (upper bound)"
    return float(count(render_guidelines(guidelines))), note


# ---------------------------------------------------------------------------------------------- estimates


@dataclass
class Episode:
    """Expected tokens of one episode of a cell, and where the figures come from."""
    tokens: dict[str, float]
    source: str
    band: tuple[float, float] = (1.0, 1.0)  # multiplicative band on the totals (the prior's factor 2)


def prior_episode(bench: str, gold: list[Optional[int]], block: float, max_steps: int, cached_price: bool,
                  judge: bool) -> Episode:
    p = PRIORS[family(bench)]
    per_task = []
    for g in gold:
        steps = min(max_steps, p["steps_per_gold"] * (p["gold_default"] if g is None else g) + p["steps_fixed"])
        prompt = steps * (p["first_prompt"] + block) + p["growth"] * steps * (steps - 1) / 2
        # the stable prefix (system prompt, tools, the memory block) is read from the cache from step 2 on
        cached = max(0.0, steps - 1) * (p["first_prompt"] + block) if cached_price else 0.0
        per_task.append({"prompt": prompt, "cached": cached, "completion": steps * p["completion"],
                         "user_prompt": p["user_prompt"], "user_cached": 0.0,
                         "user_completion": p["user_completion"],
                         "judge_prompt": p["judge_prompt"] if judge else 0.0,
                         "judge_completion": p["judge_completion"] if judge else 0.0})
    mean = {k: sum(t[k] for t in per_task) / max(1, len(per_task)) for k in FIELDS}
    return Episode(mean, p["label"] + (", judge UNMEASURED" if judge else ""), (1 / PRIOR_BAND, PRIOR_BAND))


def _mean(df: pd.DataFrame, col: str) -> float:
    return float(df[col].fillna(0).astype(float).mean()) if col in df and len(df) else 0.0


def task_shape(bench: str, gold: dict[str, Optional[int]], tasks: list[str], max_steps: int) -> tuple[float, float]:
    """(mean steps, mean non-memory prompt tokens) the prior's shape predicts for these tasks: used only as a
    ratio, to carry a pilot's measured figures from its tasks to the planned ones (longer gold, longer episodes)."""
    p = PRIORS[family(bench)]
    steps = [min(max_steps, p["steps_per_gold"] * (p["gold_default"] if gold.get(t) is None else gold[t])
                 + p["steps_fixed"]) for t in tasks]
    prompts = [n * p["first_prompt"] + p["growth"] * n * (n - 1) / 2 for n in steps]
    return sum(steps) / max(1, len(steps)), sum(prompts) / max(1, len(prompts))


def pilot_episode(pilot: pd.DataFrame, strategy: str, memory: Optional[str], block: float,
                  facts: Optional[dict[str, Any]] = None) -> Episode:
    """From the pilot's records of this strategy (else of all its strategies), memory re-counted for the plan,
    scaled from the pilot's tasks to the planned ones by their gold-action counts (`task_shape`)."""
    own = pilot[pilot["strategy"].map(base_name) == strategy]
    base = own if len(own) else pilot
    step_scale = prompt_scale = 1.0
    if facts is not None:
        gold, steps_cap = facts.get("gold_actions") or {}, int(facts.get("max_steps") or 200)
        pilot_tasks = [str(t) for t in base["task_id"]]
        if pilot_tasks and sum(gold.get(t) is not None for t in pilot_tasks) >= 0.8 * len(pilot_tasks):
            plan_s, plan_p = task_shape(facts["benchmark"], gold, facts["tasks"], steps_cap)
            pilot_s, pilot_p = task_shape(facts["benchmark"], gold, pilot_tasks, steps_cap)
            step_scale, prompt_scale = plan_s / pilot_s, plan_p / pilot_p
    steps = _mean(base, "steps") * step_scale
    nonmem = (_mean(base, "prompt_tokens") - _mean(base, "memory_tokens")) * prompt_scale
    same = len(own) and memory is not None and set(own["memory"].dropna().astype(str)) == {str(memory)}
    if len(own) and (same or strategy == BASELINE):
        per_step = _mean(own, "memory_tokens") / _mean(own, "steps") if _mean(own, "steps") else 0.0
        where = f"pilot ({len(own)} episodes of {strategy})"
    else:
        per_step = block
        where = (f"pilot ({len(base)} episodes{'' if len(own) else ', all strategies'}), memory counted from the "
                 "artifact")
    prompt = nonmem + steps * per_step
    reported = base["cached_tokens"].notna().all() if "cached_tokens" in base and len(base) else False
    base_prompt = _mean(base, "prompt_tokens")
    share = _mean(base, "cached_tokens") / base_prompt if reported and base_prompt else 0.0
    tokens = {"prompt": prompt, "cached": share * prompt, "completion": _mean(base, "completion_tokens") * step_scale,
              "user_prompt": _mean(base, "user_prompt_tokens"), "user_cached": _mean(base, "user_cached_tokens"),
              "user_completion": _mean(base, "user_completion_tokens"),
              "judge_prompt": _mean(base, "judge_prompt_tokens"),
              "judge_completion": _mean(base, "judge_completion_tokens")}
    return Episode(tokens, where)


def usd(tokens: dict[str, float], agent: Optional[Price], user: Optional[Price],
        judge: Optional[Price]) -> dict[str, float]:
    """USD per role for these tokens; nan where the role's model is unpriced (and it has tokens to price)."""
    def priced(price: Optional[Price], prompt: float, cached: float, completion: float) -> float:
        if not prompt and not completion:
            return 0.0
        return float("nan") if price is None else price.cost(prompt, completion, cached)

    return {"agent": priced(agent, tokens["prompt"], tokens["cached"], tokens["completion"]),
            "user": priced(user, tokens["user_prompt"], tokens["user_cached"], tokens["user_completion"]),
            "judge": priced(judge, tokens["judge_prompt"], 0.0, tokens["judge_completion"])}
