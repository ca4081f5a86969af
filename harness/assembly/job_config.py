"""A job's settings -> its AssemblyOptions, and the job-key suffix that keeps an assembly sweep's jobs apart."""

from __future__ import annotations

from harness.assembly.options import DEFAULTS, AssemblyOptions
from harness.assembly.providers import context_limit
from harness.settings import BenchmarkSettings, ModelSettings


def options_for(benchmark: BenchmarkSettings, model: ModelSettings) -> AssemblyOptions:
    """From the job's benchmark and model settings, once per job. The window is looked up only when something
    uses it."""
    window = model.context_window
    limit = None
    if benchmark.context_policy == "priority_drop" or window:
        max_tokens = model.kwargs.get("max_tokens")
        limit = context_limit(model.name, context_window=window, n_ctx=model.n_ctx if model.gguf else None,
                              max_tokens=int(max_tokens) if max_tokens is not None else None)
    return AssemblyOptions(placement=benchmark.placement, context_policy=benchmark.context_policy,
                           answer_mode=benchmark.answer_mode, limit=limit, strict_limit=bool(window),
                           max_observation_chars=benchmark.max_observation_chars,
                           prompt_caching=model.prompt_caching)


def variant_suffix(benchmark: BenchmarkSettings, default_placement: str) -> str:
    """The part of a job key that tells apart jobs of an assembly sweep (empty for the defaults, so
    existing run directories keep their keys)."""
    parts = []
    if benchmark.placement != default_placement:
        parts.append(f"placement={benchmark.placement}")
    for key, default in DEFAULTS.items():
        value = getattr(benchmark, key)
        if value != default:
            parts.append(f"{key}={value}")
    return ("@" + ",".join(parts)) if parts else ""
