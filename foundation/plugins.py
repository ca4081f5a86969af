"""One entry-point registry, used for strategies (`memdeliv.strategies`) and benchmarks (`memdeliv.benchmarks`):
the built-ins are declared in pyproject exactly as a plugin package declares its own, and `register()` adds one
in-process (tests, notebooks)."""

from __future__ import annotations

import sys
from importlib.metadata import entry_points
from typing import Any


class PluginRegistry:
    def __init__(self, group: str, kind: str, unknown: type[Exception]):
        self.group, self.kind, self.unknown = group, kind, unknown
        self.extra: dict[str, Any] = {}
        self._scanned: tuple[tuple[str, ...], dict[str, Any]] | None = None

    def register(self, name: str, obj: Any) -> None:
        self.extra[name] = obj

    def _entry_points(self) -> dict[str, Any]:
        # scanning installed distributions costs milliseconds and a job asks many times; a changed sys.path
        # (a plugin folder added) scans again
        path = tuple(sys.path)
        if self._scanned is None or self._scanned[0] != path:
            self._scanned = (path, {ep.name: ep for ep in entry_points(group=self.group)})
        return self._scanned[1]

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
