"""A job's config -> its AssemblyOptions, and the job-key suffix that keeps an assembly sweep's jobs apart."""

from __future__ import annotations

from typing import Any

from harness.assembly.options import DEFAULTS, AssemblyOptions
from harness.assembly.providers import context_limit


def options_for(benchmark: Any, model: Any) -> AssemblyOptions:
    """From the job's benchmark and model configs. The window is looked up only when something uses it."""
    window = getattr(model, "context_window", None)
    limit = None
    if benchmark.context_policy == "priority_drop" or window:
        kwargs = dict(getattr(model, "kwargs", None) or {})
        limit = context_limit(model.name, context_window=window,
                              n_ctx=getattr(model, "n_ctx", None) if getattr(model, "gguf", None) else None,
                              max_tokens=kwargs.get("max_tokens"))
    return AssemblyOptions(placement=benchmark.placement, context_policy=benchmark.context_policy,
                           answer_mode=benchmark.answer_mode, limit=limit, strict_limit=bool(window),
                           max_observation_chars=benchmark.get("max_observation_chars")
                           if hasattr(benchmark, "get") else getattr(benchmark, "max_observation_chars", None),
                           prompt_caching=bool(getattr(model, "prompt_caching", True)))


def variant_suffix(benchmark: Any, default_placement: str) -> str:
    """The part of a job key that tells apart jobs of an assembly sweep (empty for the defaults, so
    existing run directories keep their keys)."""
    parts = []
    placement = getattr(benchmark, "placement", default_placement)
    if placement != default_placement:
        parts.append(f"placement={placement}")
    for key, default in DEFAULTS.items():
        value = getattr(benchmark, key, default)
        if value != default:
            parts.append(f"{key}={value}")
    return ("@" + ",".join(parts)) if parts else ""
