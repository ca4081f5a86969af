"""Prices per token: LiteLLM's bundled price map (offline), or the model config's own `price_per_mtok_*`.

In strategies, whose own model calls report their usage through it, so the harness (recorded costs, the budget,
the progress line) and analysis (`make plan`, the tables) price tokens the same way. A model with no price is None,
never 0: a cost that is unknown must not read as free.

Prompt tokens are billed in three parts: read from the provider's prompt cache (the cached price), written to it
(Anthropic's cache writes, at the write price), and the rest at the input price. LiteLLM's usage counts cache
reads and writes inside `prompt_tokens`, so the plain part is prompt - cached - written.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Mapping, Optional

from strategies.base import ModelCall, report_call

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # the bundled map; never fetched at run time

PER_MTOK = 1_000_000
OVERRIDE_KEYS = ("price_per_mtok_in", "price_per_mtok_out", "price_per_mtok_cached", "price_per_mtok_cache_write")


@dataclass(frozen=True)
class Price:
    input: float  # USD per prompt token neither read from nor written to the cache
    output: float  # USD per completion token
    cached: float  # USD per prompt token read from the cache (the input price where there is no discount)
    cache_write: float  # USD per prompt token written to the cache (the input price where not billed apart)
    source: str  # "LiteLLM price map" | "model config"

    def cost(self, prompt: float, completion: float, cached: float | None = 0,
             cache_write: float | None = 0) -> float:
        cached, cache_write = float(cached or 0), float(cache_write or 0)
        plain = max(0.0, float(prompt) - cached - cache_write)
        return (plain * self.input + cached * self.cached + cache_write * self.cache_write
                + float(completion) * self.output)

    def per_mtok(self) -> str:
        """'$2.00 in / $8.00 out / $0.50 cached per 1M tokens'."""
        parts = [f"${self.input * PER_MTOK:.2f} in", f"${self.output * PER_MTOK:.2f} out"]
        if self.cached != self.input:
            parts.append(f"${self.cached * PER_MTOK:.2f} cached")
        if self.cache_write != self.input:
            parts.append(f"${self.cache_write * PER_MTOK:.2f} cache write")
        return " / ".join(parts) + " per 1M tokens"


def check_override(values: Mapping[str, Any]) -> Optional[dict[str, float]]:
    """The `model.price_per_mtok_*` keys that are set, checked: none, or at least `in` and `out`, all >= 0.
    Raises ValueError naming the key."""
    given: dict[str, Any] = {k: values.get(k) for k in OVERRIDE_KEYS if values.get(k) is not None}
    if not given:
        return None
    for key in ("price_per_mtok_in", "price_per_mtok_out"):
        if key not in given:
            raise ValueError(f"model.{key} must be set too when any model.price_per_mtok_* is given")
    out = {}
    for key, value in given.items():
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise ValueError(f"model.{key}={value!r}: expected a number of USD per 1M tokens") from None
        if not number >= 0:
            raise ValueError(f"model.{key}={value!r}: a price must be >= 0")
        out[key] = number
    return out


def from_override(values: Mapping[str, float]) -> Price:
    per = {k: v / PER_MTOK for k, v in values.items()}
    return Price(input=per["price_per_mtok_in"], output=per["price_per_mtok_out"],
                 cached=per.get("price_per_mtok_cached", per["price_per_mtok_in"]),
                 cache_write=per.get("price_per_mtok_cache_write", per["price_per_mtok_in"]), source="model config")


def price_of(model: str | None, override: Mapping[str, Any] | None = None) -> Optional[Price]:
    """The model's price: the config's override when given, else LiteLLM's bundled map; None = unpriced."""
    checked = check_override(override or {})
    if checked:
        return from_override(checked)
    if not model:
        return None
    import litellm

    litellm.suppress_debug_info = True  # else an unmapped model prints LiteLLM's provider list to stderr
    try:
        info = litellm.get_model_info(model)
    except Exception:  # LiteLLM raises for a model it does not map
        return None
    plain, out = info.get("input_cost_per_token"), info.get("output_cost_per_token")
    if plain is None or out is None:
        return None
    cached = info.get("cache_read_input_token_cost")
    write = info.get("cache_creation_input_token_cost")
    return Price(input=float(plain), output=float(out), cached=float(plain if cached is None else cached),
                 cache_write=float(plain if write is None else write), source="LiteLLM price map")


def usage_counts(response: Any) -> dict[str, int]:
    """`prompt_tokens` and `completion_tokens` of a LiteLLM response (an object or a dict), those it has."""
    usage = getattr(response, "usage", None) or (response.get("usage") if isinstance(response, dict) else None)
    if usage is None:
        return {}
    get = usage.get if isinstance(usage, dict) else (lambda k: getattr(usage, k, None))
    counts = {k: get(k) for k in ("prompt_tokens", "completion_tokens")}
    return {k: int(v) for k, v in counts.items() if v is not None}


def report_usage(role: str, model: str, usage: Mapping[str, int]) -> None:
    """A model call a strategy made itself, reported (strategies.base.report_call) with the provider's token
    counts and what they cost at the model's price: None when the model is unpriced, never a silent 0."""
    prompt, completion = usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0)
    price = price_of(model)
    report_call(ModelCall(role=role, model=model, prompt_tokens=prompt, completion_tokens=completion,
                          cost_usd=None if price is None else price.cost(prompt, completion)))


def register(model: str, values: Mapping[str, Any]) -> None:
    """Teach LiteLLM this process's override, so every recorded cost (agent, user simulator, memory building)
    is priced by `litellm.completion_cost` exactly as a mapped model is, cached tokens included."""
    checked = check_override(values)
    if not checked:
        return
    import litellm

    price = from_override(checked)
    provider = model.split("/", 1)[0] if "/" in model else "openai"
    litellm.register_model({model: {
        "input_cost_per_token": price.input, "output_cost_per_token": price.output,
        "cache_read_input_token_cost": price.cached, "cache_creation_input_token_cost": price.cache_write,
        "litellm_provider": provider, "mode": "chat"}})


def fmt_usd(value: float | None) -> str:
    """'$1.23', '$0.0042', 'unpriced' for None / nan."""
    if value is None or value != value:
        return "unpriced"
    if abs(value) >= 100:
        return f"${value:,.0f}"
    if abs(value) >= 1:
        return f"${value:,.2f}"
    return f"${value:.4f}"
