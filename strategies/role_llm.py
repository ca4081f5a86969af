"""One plain-text model call for the memory designs that prompt a model themselves (reasoning_bank's judge and
extractor), reported with its tokens and price (strategies.prices.report_usage -> strategies.base.report_call),
so an online call counts on its episode's row and an offline build's calls are summed by the builder.

A model served in this process (a provider declared under `memdeliv.providers`: the scripted and simulated
models) is installed from its entry point before the first call, as the harness installs the run's model; such
a run model cannot judge or extract, so `role_model` sends those calls to the SCRIPTED designs model
(harness/scripted/memory_designs.py) instead, and says so in the strategy's facts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from foundation.plugins import PluginRegistry
from strategies.prices import report_usage, usage_counts

SCRIPTED_DESIGNS = "memdeliv-scripted-designs/roles"  # its entry point: pyproject.toml, memdeliv.providers
_PROVIDERS = PluginRegistry("memdeliv.providers", "provider", KeyError)


def served_in_process(model: str) -> bool:
    return "/" in model and model.split("/", 1)[0] in _PROVIDERS.available()


def role_model(chosen: Optional[str], run_model: Optional[str]) -> str:
    """The model of a design's own calls: the option when set, else the run's model, except a scripted or
    simulated run model (not a language model), whose calls the SCRIPTED designs model answers."""
    if chosen:
        return chosen
    if not run_model or served_in_process(run_model):
        return SCRIPTED_DESIGNS
    return run_model


@dataclass
class RoleLLM:
    model: str
    kwargs: dict[str, Any] = field(default_factory=dict)  # temperature, max_tokens, api_base, ...
    completion: Optional[Callable[..., Any]] = None  # tests inject one; default litellm.completion
    usage: dict[str, int] = field(default_factory=lambda: {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0})

    def ask(self, system: str, user: str, role: str) -> str:
        """The model's answer text ("" when it gave none); the call is reported under `role`."""
        call = self.completion
        if call is None:
            import litellm

            if served_in_process(self.model):
                _PROVIDERS.load(self.model.split("/", 1)[0]).install()
            call = litellm.completion
        messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        response = call(model=self.model, messages=messages, **self.kwargs)
        counts = usage_counts(response)
        report_usage(role, self.model, counts)
        self.usage["calls"] += 1
        for key in ("prompt_tokens", "completion_tokens"):
            self.usage[key] += counts.get(key, 0)
        choices = getattr(response, "choices", None) or []
        message = getattr(choices[0], "message", None) if choices else None
        return str(getattr(message, "content", None) or "")
