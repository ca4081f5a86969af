"""From a job's model settings to the two clients of an episode (agent and user simulator).

`settings` are the job's `ModelSettings` (harness/settings.py); a secret among its kwargs (`${oc.env:VAR}`) is read
here, from this process's environment (a Ray worker's own). A model served in-process (a scripted model,
harness/serving/providers.py) is installed here."""

from __future__ import annotations

import os
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Optional

from harness import secrets
from harness.settings import ModelSettings, plain
from harness.serving.model_client import ModelClient, supports_native_tools
from harness.serving.providers import Provider, serve
from memory_kit import prices


class ModelConfigError(ValueError):
    pass


@dataclass
class ModelSpec:
    settings: ModelSettings
    api_base: Optional[str] = None  # set while a managed local server serves this model
    api_key: Optional[str] = None

    def __post_init__(self) -> None:
        secrets.register_env(self.settings.api_key_env)  # redacted by value wherever it shows up (error bodies)
        secrets.register_value(self.api_key)
        self.provider: Optional[Provider] = serve(self.settings.name)  # a scripted model: its handler, installed
        m = self.settings
        prices.register(m.name, m.price_override())  # model.price_per_mtok_*: recorded costs use it
        if m.api_key_env and not os.environ.get(m.api_key_env):
            raise ModelConfigError(f"model {m.name}: environment variable {m.api_key_env} is not set")

    @property
    def name(self) -> str:
        return self.settings.name

    @property
    def user_name(self) -> str:
        return self.settings.user_name or self.settings.name

    @property
    def scripted(self) -> bool:
        return bool(self.settings.scripted)

    @property
    def simulated(self) -> bool:
        """The SIMULATED agent (harness/scripted/simulated.py): planted success probabilities, not a model."""
        return self.provider is not None and self.provider.simulated

    @property
    def prompted_tools(self) -> bool:
        """Tool schemas in the prompt and text replies, instead of the provider's native tool calls."""
        if self.settings.tool_mode == "auto":
            return not supports_native_tools(self.name)
        return self.settings.tool_mode == "prompted"

    @property
    def user_prompted_tools(self) -> bool:
        """tool_mode is the agent model's; a different user-simulator model gets `auto`."""
        return self.prompted_tools if self.user_name == self.name else not supports_native_tools(self.user_name)

    def served_kwargs(self) -> dict[str, Any]:
        """Where a managed local server listens (empty for hosted models); strategies' own calls need it too."""
        return {"api_base": self.api_base, "api_key": self.api_key} if self.api_base else {}

    def _kwargs(self, base: dict[str, Any], served: bool = True) -> dict[str, Any]:
        kwargs = dict(base)
        if self.settings.api_key_env:  # read at call time; never written to config or records
            kwargs["api_key"] = os.environ[self.settings.api_key_env]
        return {**kwargs, **self.served_kwargs()} if served else kwargs

    def clients(self, task_script: dict[str, Any] | None = None) -> tuple[ModelClient, ModelClient]:
        agent_kwargs = self._kwargs(plain(self.settings.kwargs))
        user_base = self.settings.kwargs if self.settings.user_kwargs is None else self.settings.user_kwargs
        user_kwargs = self._kwargs(plain(user_base), served=self.user_name == self.name)
        agent_meta = user_meta = None
        if self.scripted:
            extra = dict(agent_kwargs.pop("metadata", None) or {})
            if self.simulated:  # the simulated agent reads its profile and planted world from here, and draws
                # once per episode: one clients() call is one episode
                extra.update(profile=self.settings.profile, world=self.settings.world, episode=uuid.uuid4().hex)
            user_kwargs.pop("metadata", None)
            agent_meta = {**extra, "role": "agent", "script": task_script}
            user_meta = {**extra, "role": "user", "script": task_script}
        retries, backoff = self.settings.max_retries, self.settings.retry_backoff_s
        return (ModelClient(self.name, agent_kwargs, metadata=agent_meta, max_retries=retries, retry_backoff_s=backoff),
                ModelClient(self.user_name, user_kwargs, metadata=user_meta, max_retries=retries,
                            retry_backoff_s=backoff))


@contextmanager
def open_model(settings: ModelSettings, log_dir: Path | None = None) -> Iterator[ModelSpec]:
    """The model of a job, with its managed local server (model.gguf set) running for exactly as long."""
    if not settings.gguf:
        yield ModelSpec(settings)
        return
    from harness.serving.local_server import API_KEY, LocalServer

    log = Path(log_dir) / "local_server.log" if log_dir else None
    with LocalServer(settings.gguf, n_ctx=settings.n_ctx, log_path=log,
                     extra_args=plain(settings.server_args)) as server:
        yield ModelSpec(settings, api_base=server.api_base, api_key=API_KEY)
