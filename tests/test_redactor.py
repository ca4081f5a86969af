"""The compiled redactor: known values whatever the variable's name, key shapes, built once, logs and child env."""

from __future__ import annotations

from harness import secrets
from harness.serving.local_server import _child_env
from harness.secrets import REDACTED, redact_text

CRED = "Zq81-mmWx0-plQ77-vv3k"  # fake: no known key shape, under a variable that names no secret


def test_a_configured_key_variable_is_redacted_by_value_and_kept_from_children(monkeypatch, tmp_path):
    monkeypatch.setenv("LLMCRED2", CRED)
    assert CRED in redact_text(f"echo {CRED}")  # nothing says it is a secret yet
    assert "LLMCRED2" in _child_env()
    secrets.learn_from_config({"model": {"api_key_env": "LLMCRED2", "kwargs": {"api_key": "literal-key-123456"}},
                               "strategy": {"options": {"curator_api_key_env": None}}})
    assert redact_text(f"body: {CRED}; also literal-key-123456") == f"body: {REDACTED}; also {REDACTED}"
    assert "LLMCRED2" not in _child_env()
    log = tmp_path / "local_server.log"
    log.write_text(f"started\nheader x-key={CRED}\n")
    secrets.redact_file(log)
    assert CRED not in log.read_text() and REDACTED in log.read_text()


def test_shapes_and_what_is_not_a_secret():
    cases = {
        "request auth was Bearer abc.def-ghi_123": f"request auth was Bearer {REDACTED}",
        "Authorization: tok_123456789": f"Authorization: {REDACTED}",
        "AUTHORIZATION: Bearer tok_123456789": f"AUTHORIZATION: Bearer {REDACTED}",
        "key sk-ant-api03-abcdefghij": f"key {REDACTED}",
        "task-abcdefghijkl and ghp_" + "a" * 30: f"task-abcdefghijkl and {REDACTED}",
        "order #W2378156 for bearer bonds": "order #W2378156 for bearer bonds",  # 'bonds' is 5 chars: no token
    }
    for text, expected in cases.items():
        assert redact_text(text) == expected


def test_compiled_once_and_rebuilt_when_the_secrets_change(monkeypatch):
    first = secrets.redactor()
    assert secrets.redactor() is first  # no rescan of the environment per string
    monkeypatch.setenv("ANOTHER_SERVICE_TOKEN", "tok-value-0123456789")
    second = secrets.redactor()
    assert second is not first and redact_text("x tok-value-0123456789") == f"x {REDACTED}"
