"""A local Ray starts without Ray 2.60's token-authentication notice, and with token authentication still on."""

from __future__ import annotations

import subprocess
import sys

from conftest import HUNG_S, REPO

START = """
from types import SimpleNamespace
import os, ray
from harness.runner import ray_executor
ray_executor.ray_up(SimpleNamespace(address=None, num_cpus=1, cpus_per_episode=1.0))
print("auth mode:", os.environ.get("RAY_AUTH_MODE"))
ray_executor.ray_down()
"""


def test_local_ray_start_prints_no_token_auth_warning():
    proc = subprocess.run([sys.executable, "-c", START], cwd=REPO, capture_output=True, text=True, timeout=HUNG_S)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "auth mode: token" in proc.stdout  # Ray's default (authentication on) is kept
    assert "Token authentication" not in proc.stdout + proc.stderr
