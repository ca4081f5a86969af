"""The token estimates behind `make plan` (analysis/plan.py): the prior, a pilot's figures carried to the planned
tasks, the memory block counted from the artifact, and USD per role (memory_kit/prices.py). Pure: no I/O but
reading the memory artifact."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import pandas as pd

from analysis.statistics.metrics import BASELINE
from memory_kit.prices import Price

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
    """Tokens of the block the strategy delivers at a step, and what the figure stands for: the strategy's own
    declaration (its `plan`, strategies/plan_block.py), counted from the artifact with its own rendering."""
    from memory_kit.budget import token_counter
    from strategies.plan_block import full_block
    from strategies import declaration, typed_options

    count = token_counter(model)
    plan = declaration(strategy).plan
    estimate = plan(memory, count, typed_options(strategy, options)) or full_block(memory, count)
    return float(estimate.block_tokens), estimate.note


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
