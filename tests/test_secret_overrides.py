"""Command-line secrets are recognised by exact key name or by a key-shaped value, never by a word in the key:
`strategy.options.budget_tokens=120` is an option, `+model.kwargs.api_key=...` a secret (harness.secrets)."""

from __future__ import annotations

import os

import pytest

from harness import secrets
from harness.run import checked_command, compose_job, protect_secrets

BASE = ["model=oracle", "benchmark=tau2_retail", "benchmark.limit=1", "run_name=t"]


def test_budget_tokens_reaches_the_strategy_as_an_integer():
    from strategies import validate_options

    _, overrides = checked_command(["-m", *BASE, "strategy=core_retrieval", "strategy.options.budget_tokens=120"])
    assert "strategy.options.budget_tokens=120" in overrides
    options = compose_job(overrides).strategy_options()
    assert options["budget_tokens"] == 120 and isinstance(options["budget_tokens"], int)
    validate_options("core_retrieval", options)


@pytest.mark.parametrize("override", [
    "strategy.options.budget_tokens=120", "+strategy.options.token_budget=500", "model.kwargs.max_tokens=64",
    "model.api_key_env=MY_CREDENTIAL", "+model.kwargs.max_completion_tokens=9", "benchmark.task_ids=['5','12']",
    "model.name=openai/gpt-4.1",
])
def test_ordinary_options_stay_on_the_command_line(override):
    assert protect_secrets([override]) == [override]


@pytest.mark.parametrize("override, value", [
    ("+model.kwargs.api_key=plain-credential-value", "plain-credential-value"),  # by exact key name
    ("model.kwargs.api_key='quoted-credential'", "quoted-credential"),
    ("+model.kwargs.aws_secret_access_key=abcDEF123456", "abcDEF123456"),
    ("+strategy.options.curator_api_key=xyz-credential", "xyz-credential"),  # *_api_key
    ("+model.kwargs.extra_headers.X-Auth=Bearer abc.def-ghi_123", "Bearer abc.def-ghi_123"),  # by the value's shape
    ("+model.kwargs.custom=sk-plantedOverrideSecret012345", "sk-plantedOverrideSecret012345"),
])
def test_secrets_move_into_the_environment(override, value, monkeypatch):
    monkeypatch.setattr(os, "environ", dict(os.environ))  # the moved value does not outlive the test
    (moved,) = protect_secrets([override])
    key = override.split("=", 1)[0]
    assert value not in moved and moved.startswith(f"{key}='${{oc.env:MEMDELIV_SECRET_0_KEY}}'")
    assert os.environ["MEMDELIV_SECRET_0_KEY"] == value


def test_key_names_and_values_are_recognised_exactly():
    assert secrets.is_secret_key("model.kwargs.api_key") and secrets.is_secret_key("+x.aws_session_token")
    assert not any(secrets.is_secret_key(k) for k in ("budget_tokens", "max_tokens", "token_budget", "api_key_env",
                                                      "model.tokenizer", "secret_santa"))
    assert secrets.looks_secret("sk-ant-api03-abcdefghij") and secrets.looks_secret("Bearer abcdef123")
    assert not secrets.looks_secret("120") and not secrets.looks_secret("task-abcdefghijkl")


def test_a_value_under_a_credential_key_in_a_config_is_redacted():
    secrets.learn_from_config({"model": {"kwargs": {"aws_secret_access_key": "Plain9Credential77"}}})
    assert secrets.redact_text("echo Plain9Credential77") == f"echo {secrets.REDACTED}"
