"""One entry-point registry, used for strategies (`memdeliv.strategies`) and benchmarks (`memdeliv.benchmarks`):
the built-ins are declared in pyproject exactly as a plugin package declares its own, and `register()` adds one
in-process (tests, notebooks)."""

from __future__ import annotations

from importlib.metadata import entry_points
from typing import Any


class PluginRegistry:
    def __init__(self, group: str, kind: str, unknown: type[Exception]):
        self.group, self.kind, self.unknown = group, kind, unknown
        self.extra: dict[str, Any] = {}

    def register(self, name: str, obj: Any) -> None:
        self.extra[name] = obj

    def _entry_points(self) -> dict[str, Any]:
        return {ep.name: ep for ep in entry_points(group=self.group)}

    def available(self) -> list[str]:
        return sorted(set(self._entry_points()) | set(self.extra))

    def load(self, name: str) -> Any:
        """The object registered as `name`; loading an entry point is the first import of its code."""
        if name in self.extra:
            return self.extra[name]
        eps = self._entry_points()
        if name not in eps:
            raise self.unknown(f"unknown {self.kind} {name!r}; available: {', '.join(self.available())}")
        return eps[name].load()
