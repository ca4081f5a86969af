"""Scripted (fake) models for self-checks and tests, each a LiteLLM provider declared under the entry-point group
`memdeliv.providers` (harness/serving/providers.py), plus the per-benchmark scripts they replay. Never used unless
a config names them; production code names none of them."""

from __future__ import annotations

from harness.serving.providers import register_provider, unregister_provider  # noqa: F401  (tests register fakes)
