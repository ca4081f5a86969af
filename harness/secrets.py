"""One compiled redactor for everything the harness writes (records, trajectories, manifest, config, logs).

Secrets are removed by value (every secret the harness knows: variables named by any `*_api_key_env`,
literal values under a credential key (SECRET_KEYS), env variables whose name says KEY/TOKEN/SECRET/PASSWORD) and by
shape (`Authorization:` / `Bearer` values, common provider key formats). The known values and the shapes are
one regex, compiled once and rebuilt only when the set of secrets changes: redaction runs on every
string of every record, so it must not rescan the environment each time.
"""

from __future__ import annotations

import os
import re
import threading
from typing import Any

REDACTED = "***REDACTED***"
MIN_SECRET_LEN = 8  # shorter values would redact ordinary words

_SECRET_ENV = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL)", re.I)
# Shapes. Every alternative starts with a literal, so the regex engine skips ahead on its first characters
# (a leading look-behind or \b would make it try every alternative at every position: ~5x slower), and the
# whole regex runs only on text holding one of the markers (most text holds none).
_SHAPES = re.compile(
    r"(?P<pre>(?:[Bb]earer|BEARER)\s+|[Aa]uthorization\s*[:=]\s*(?![Bb]earer\b))(?P<tok>[^\s\"',;&]{6,})"
    r"|(?P<key>sk-[A-Za-z0-9_\-]{8,}"  # OpenAI / Anthropic (sk-ant-...)
    r"|AKIA[0-9A-Z]{12,}"  # AWS access key id
    r"|hf_[A-Za-z0-9]{8,}"  # Hugging Face
    r"|gh[pousr]_[A-Za-z0-9]{20,}"  # GitHub
    r"|AIza[0-9A-Za-z_\-]{30,}"  # Google
    r"|xox[abprs]-[A-Za-z0-9\-]{10,})"  # Slack
)
_MARKERS = ("earer", "EARER", "uthorization", "sk-", "AKIA", "hf_", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "AIza",
            "xox")


# Config keys that hold a credential, by exact name (the last part of a dotted key; plus any `*_api_key`):
# LiteLLM's and the providers' credential arguments. Never by substring: "token" is in budget_tokens,
# max_tokens, token_budget, ... and guessing from it broke ordinary options.
SECRET_KEYS = frozenset({
    "api_key", "password", "secret", "token", "access_token", "auth_token", "bearer_token", "azure_ad_token",
    "client_secret", "aws_access_key_id", "aws_secret_access_key", "aws_session_token", "vertex_credentials",
})


def is_secret_key(key: str) -> bool:
    """`model.kwargs.api_key`, `+model.kwargs.aws_secret_access_key`, `openai_api_key`: yes; `budget_tokens`: no."""
    name = key.rsplit(".", 1)[-1].lstrip("+~").lower()
    return name in SECRET_KEYS or name.endswith("_api_key")


def looks_secret(value: str) -> bool:
    """A value with a credential's shape (a provider key format, a Bearer / Authorization value), any key."""
    return any(marker in value for marker in _MARKERS) and _SHAPES.sub(_shape, value) != value


def _shape(m: re.Match[str]) -> str:
    if m.group("key") is None:
        return m.group("pre") + REDACTED
    start = m.start()
    if start and (m.string[start - 1].isalnum() or m.string[start - 1] == "_"):
        return m.group(0)  # inside a longer word (e.g. "task-..."): not a key
    return REDACTED


class Redactor:
    """Known secret values (one regex of literals, longest first) and key shapes."""

    def __init__(self, values: list[str]):
        values = sorted(set(values), key=len, reverse=True)
        self.values = re.compile("|".join(re.escape(v) for v in values)) if values else None

    def __call__(self, text: str) -> str:
        if self.values is not None:
            text = self.values.sub(REDACTED, text)
        if any(marker in text for marker in _MARKERS):
            text = _SHAPES.sub(_shape, text)
        return text


_lock = threading.Lock()
_known_envs: set[str] = set()  # variables named by *_api_key_env: redacted whatever their name
_known_values: set[str] = set()  # literal secrets (api_key kwargs) that never were in the environment
_compiled: tuple[tuple[Any, ...], Redactor] | None = None


def register_env(*names: str | None) -> None:
    """Variables that hold secrets although their names may not say so (`model.api_key_env=LLMCRED`)."""
    new = {n for n in names if n} - _known_envs
    if new:
        with _lock:
            _known_envs.update(new)


def is_secret_env(name: str) -> bool:
    """A variable whose value must not leave the process (e.g. into a child's environment)."""
    return name in _known_envs or bool(_SECRET_ENV.search(name))


def redact_file(path: str | os.PathLike[str]) -> None:
    """Rewrite a log written by another process (e.g. the local model server) without known secrets."""
    from pathlib import Path

    from foundation.atomic import write_text_atomic

    path = Path(path)
    if path.is_file():
        text = path.read_text(encoding="utf-8", errors="replace")
        clean = redact_text(text)
        if clean != text:
            write_text_atomic(path, clean)


def register_value(*values: object) -> None:
    new = {v for v in values if isinstance(v, str) and len(v) >= MIN_SECRET_LEN and not v.startswith("${")}
    if new - _known_values:
        with _lock:
            _known_values.update(new)


def learn_from_config(node: object, key: str = "") -> None:
    """Register every `*api_key_env` variable and every value under a secret key (is_secret_key) in a config."""
    if isinstance(node, dict):
        for k, v in node.items():
            learn_from_config(v, str(k))
    elif isinstance(node, (list, tuple)):
        for v in node:
            learn_from_config(v, key)
    elif isinstance(node, str):
        if key.endswith("api_key_env"):
            register_env(node)
        elif is_secret_key(key):
            register_value(node)


def _env_secrets() -> list[str]:
    return [v for k, v in os.environ.items()
            if v and len(v) >= MIN_SECRET_LEN and (k in _known_envs or _SECRET_ENV.search(k))]


def _fingerprint() -> tuple[Any, ...]:
    """Cheap test for "the secrets may have changed": the environment's size and the known variables' values."""
    return (len(os.environ), len(_known_values), tuple(os.environ.get(n) for n in sorted(_known_envs)))


def redactor() -> Redactor:
    """The compiled redactor, rebuilt only when the known secrets (or the environment's size) changed."""
    global _compiled
    fp = _fingerprint()
    current = _compiled
    if current is not None and current[0] == fp:
        return current[1]
    with _lock:
        _compiled = (fp, Redactor(_env_secrets() + sorted(_known_values)))
        return _compiled[1]


def redact_text(text: str) -> str:
    return redactor()(text)
