"""LiteLLM custom providers served in this process: a model string `<provider>/<model>` whose provider is
registered is answered by its handler, through the same client, retries and ledger as any hosted model.

The scripted models (the oracle, the SIMULATED agent, the scripted ACE roles and guideline reflector, all in
harness/scripted/) are providers like any other: each is declared under the entry-point group
`memdeliv.providers` in pyproject.toml (name: the provider prefix; value: its `Provider`), so the production
serving code names none of them, as inspect_ai registers its mock model as an ordinary provider. A plugin
package can declare its own the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional

from foundation.plugins import PluginRegistry

GROUP = "memdeliv.providers"


@dataclass(frozen=True)
class Provider:
    """A provider this harness serves in-process. `install()` registers its handler (idempotent)."""

    name: str  # the model-string prefix: `<name>/<model>`
    install: Callable[[], Any]
    simulated: bool = False  # planted success probabilities, not a language model: a run says so in its manifest
    # how the ledger counts a delivered memory block for this provider's models (harness/ledger.py); None: the
    # model's tokenizer, as LiteLLM counts it
    memory_tokens: Optional[Callable[[str], int]] = None


class UnknownProvider(KeyError):
    pass


_REGISTRY = PluginRegistry(GROUP, "provider", UnknownProvider)
register = _REGISTRY.register  # in-process, as tests and notebooks do: register(name, Provider(...))


def declared_provider(model: str) -> Optional[Provider]:
    """The declared `Provider` of a model string, served here; None for a model LiteLLM routes itself."""
    prefix = str(model).split("/", 1)[0]
    return _REGISTRY.load(prefix) if "/" in str(model) and prefix in _REGISTRY.available() else None


def serve(model: str) -> Optional[Provider]:
    """Install the provider of `model` in this process when it is one of ours (a job's ModelSpec does it; a
    script that drives tau2 itself, bench/overhead.py, calls this)."""
    provider = declared_provider(model)
    if provider is not None:
        provider.install()
    return provider


def served_here(model: str) -> bool:
    """A declared provider, or any other custom provider registered with LiteLLM in this process (no key, no
    route to check)."""
    import litellm

    prefix = str(model).split("/", 1)[0]
    return declared_provider(model) is not None or prefix in {p.get("provider") for p in litellm.custom_provider_map}


def register_provider(name: str, handler: Any, replace: bool = True) -> Any:
    """Serve LiteLLM model strings `<name>/...` from `handler` (a CustomLLM) and return the handler in use.

    replace=False keeps an already registered handler (idempotent install); tests pass a fresh one.
    """
    import litellm

    current = [p for p in litellm.custom_provider_map if p.get("provider") == name]
    if current and not replace:
        return current[0]["custom_handler"]
    litellm.custom_provider_map[:] = [p for p in litellm.custom_provider_map if p.get("provider") != name]
    litellm.custom_provider_map.append({"provider": name, "custom_handler": handler})
    litellm.utils.custom_llm_setup()
    return handler


def unregister_provider(name: str) -> None:
    import litellm

    litellm.custom_provider_map[:] = [p for p in litellm.custom_provider_map if p.get("provider") != name]
    litellm.utils.custom_llm_setup()
