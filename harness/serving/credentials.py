"""Before anything is written: can LiteLLM route every model of a job, and does each hosted one have its key?

A job calls up to three models: the agent (model.name), the user simulator (model.user_name) and τ²'s judge
(benchmark.judge_model). A model string LiteLLM cannot route, or a provider key missing from the environment,
would otherwise surface only inside the records, episode after episode.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import litellm

from harness.serving.providers import served_here
from harness.settings import JobSettings, plain

CONFIG_DIR = Path(__file__).resolve().parents[2] / "configs"  # harness/config.py's, found without the config layer

class ModelCheckError(ValueError):
    pass


def check_models(s: JobSettings, judge_used: bool = True) -> None:
    """Raise ModelCheckError naming the first model of the job that cannot be called, and why.

    judge_used: False when no selected task needs the judge (e.g. tau2-bench before v1.0.1): it is never called."""
    m = s.model
    if m.gguf:  # a managed local server: its address and key are known only once it runs
        return
    keyed = bool(m.api_key_env)  # the agent and the user simulator get that variable's value as their key
    user_kwargs = m.kwargs if m.user_kwargs is None else m.user_kwargs
    roles = [("model.name", m.name, m.kwargs, keyed), ("model.user_name", m.user_name, user_kwargs, keyed)]
    judge = s.benchmark.judge_model
    if judge and judge_used:  # its key: the provider's variable (or judge_kwargs), never model.api_key_env
        roles.append(("benchmark.judge_model", judge, s.benchmark.judge_kwargs, False))
    for field, name, kwargs, has_key in roles:
        if name and not served_here(name):
            check_model(field, name, plain(kwargs or {}), has_key)


def check_model(field: str, name: str, kwargs: dict[str, Any], has_key: bool = False) -> None:
    """has_key: the harness passes the model a key of its own (model.api_key_env)."""
    try:
        litellm.get_llm_provider(name, api_base=kwargs.get("api_base"))
    except Exception:  # LiteLLM's "LLM Provider NOT provided" (a BadRequestError)
        raise ModelCheckError(
            f"{field}={name!r}: LiteLLM cannot route this model string. Give a config of configs/model/ "
            f"(MODEL= or model=: {', '.join(model_configs())}) or a LiteLLM model string `provider/model`, "
            f"e.g. openai/gpt-4.1 or anthropic/claude-sonnet-4-5") from None
    if has_key or kwargs.get("api_key"):
        return
    missing = _missing_keys(name, kwargs)
    if missing:
        raise ModelCheckError(
            f"{field}={name}: no API key: set {' or '.join(missing)} in the environment"
            + (" (or name the variable that holds it with model.api_key_env=<VAR>)" if field.startswith("model.")
               else ""))


def model_configs() -> list[str]:
    return sorted(p.stem for p in (Path(CONFIG_DIR) / "model").glob("*.yaml"))


def _missing_keys(name: str, kwargs: dict[str, Any]) -> list[str]:
    """The provider's API-key variables when none is set (LiteLLM's list; other settings it names, such as a base
    URL with a default or cloud credentials found by other means, are not required here)."""
    try:
        found = litellm.validate_environment(model=name, api_base=kwargs.get("api_base"))
    except Exception:  # a provider LiteLLM cannot check: the first call will say
        return []
    if found.get("keys_in_environment"):
        return []
    return [k for k in found.get("missing_keys") or [] if k.endswith("_API_KEY")]
