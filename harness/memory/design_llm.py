"""The model a design's train builder calls (harness/memory/reasoning_bank.py, workflows.py, cheatsheet.py) and
what its calls cost: the build cost analysis.runs.build_cost reads from build.json."""

from __future__ import annotations

from typing import Any

from memory_kit.prices import price_of
from memory_kit.role_llm import RoleLLM, role_model


def design_llm(config: dict[str, Any], model: str | None, **kwargs: Any) -> RoleLLM:
    """`model`, else the collection run's model (its kwargs kept; a scripted or simulated run: the SCRIPTED designs
    model), with `kwargs` added (a role's temperature)."""
    name = role_model(model, config["model"]["name"])
    run_kwargs = dict(config["model"].get("kwargs") or {}) if name == config["model"]["name"] else {}
    return RoleLLM(name, {**run_kwargs, **kwargs})


def priced_usage(llm: RoleLLM) -> dict[str, Any]:
    """The calls' tokens, and their USD where the model has a price (None otherwise)."""
    price = price_of(llm.model)
    cost = None if price is None else price.cost(llm.usage["prompt_tokens"], llm.usage["completion_tokens"])
    return {**llm.usage, "cost_usd": cost}
