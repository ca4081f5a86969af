"""Scripted (fake) models for self-checks and tests, each a LiteLLM provider declared under the entry-point group
`memdeliv.providers` (harness/serving/providers.py, which also registers a test's own fakes), plus the
per-benchmark scripts they replay. Never used unless a config names them; production code names none of them."""
