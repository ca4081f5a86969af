"""The project's interpreter reads LiteLLM's bundled price map without the Makefile's export: `make setup` puts
scripts/memdeliv-offline.pth into .venv, so `.venv/bin/tau2 view` or a plain `.venv/bin/python` never waits on a
fetch of the map (the network is not there)."""

from __future__ import annotations

import os
import subprocess

import pytest
from conftest import REPO

PYTHON = REPO / ".venv" / "bin" / "python"
SHOW = "import os; print(os.environ.get('LITELLM_LOCAL_MODEL_COST_MAP'))"


@pytest.mark.skipif(not PYTHON.exists(), reason="no .venv here: `make setup` makes it")
@pytest.mark.parametrize("given, seen", [(None, "True"), ("False", "False")])  # a value the user set wins
def test_a_fresh_venv_interpreter_sets_the_offline_price_map(given, seen, tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "LITELLM_LOCAL_MODEL_COST_MAP"}
    if given is not None:
        env["LITELLM_LOCAL_MODEL_COST_MAP"] = given
    out = subprocess.run([str(PYTHON), "-c", SHOW], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=120, check=True).stdout
    assert out.strip() == seen
