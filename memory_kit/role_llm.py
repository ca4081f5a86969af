"""One plain-text model call for the memory designs that prompt a model themselves (reasoning_bank's judge and
extractor, dynamic_cheatsheet's curator, awm's inducer): the kit's client (memory_kit/role_client.py: the run's
model, key and retries, each call reported with its tokens and price), plus a tally an offline builder sums.

A model served in this process (a provider declared under `memdeliv.providers`: the scripted and simulated
models) is installed from its entry point before the first call, as the harness installs the run's model; such
a run model cannot judge or extract, so `role_model` sends those calls to the SCRIPTED designs model
(harness/scripted/memory_designs.py) instead, and says so in the strategy's facts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from memory_kit.prices import usage_counts
from memory_kit.role_client import SCRIPTED_DESIGNS, RoleClient, content, served_in_process

__all__ = ["SCRIPTED_DESIGNS", "RoleLLM", "role_model", "served_in_process"]


def role_model(chosen: Optional[str], run_model: Optional[str]) -> str:
    """The model of a design's own calls (RoleClient.for_role, for a builder that has no client yet)."""
    return RoleClient(run_model or "").for_role(chosen).model


@dataclass
class RoleLLM(RoleClient):
    usage: dict[str, int] = field(default_factory=lambda: {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0})

    def ask(self, system: str, user: str, role: str) -> str:
        """The model's answer text ("" when it gave none); the call is reported under `role`. A call that fails
        after its retries raises RoleCallFailed (memory_kit/role_client.py)."""
        messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        response, _ = self.call(role, messages)
        counts = usage_counts(response)
        self.usage["calls"] += 1
        for key in ("prompt_tokens", "completion_tokens"):
            self.usage[key] += counts.get(key, 0)
        return str(content(response) or "")

    @classmethod
    def role(cls, client: RoleClient, chosen: Optional[str] = None) -> "RoleLLM":
        """A design's role client from the run's (`StrategyContext.run_client()`), `chosen` its model option."""
        return cls.of(client.for_role(chosen))
