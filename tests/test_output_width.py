"""Printouts keep to a 160-column terminal (analysis.fmt.WIDTH) with the longest labels real runs have: the
SIMULATED WORLD banner over both profiles, and `make power` over a two-profile run. `make plan`
(tests/test_plan.py), `analysis.audit` (tests/test_audit.py) and the end-of-sweep table (tests/test_table_width.py)
are checked beside their own behaviour."""

from __future__ import annotations

import json

import pytest

from analysis import fmt, power
from strategies import render_guidelines
from memory_kit.memory_file import load_memory
from harness.scripted import simulated_world as world

MODELS = ["memdeliv-simulated/strong", "memdeliv-simulated/small", "openai/gpt-4.1"]


def widest(text: str) -> int:
    return max(map(len, text.splitlines()))


def test_the_simulated_banner_wraps_at_160_columns_and_keeps_every_word():
    banner = fmt.simulated_banner(MODELS)
    assert widest(banner) <= fmt.WIDTH < len(" ".join(banner.split()))  # it had to wrap
    assert " ".join(banner.split()).startswith("SIMULATED WORLD (memdeliv-simulated/small, memdeliv-simulated/strong):")
    assert "(docs/simulated-world.md)." in banner and fmt.simulated_banner(["openai/gpt-4.1"]) == ""


@pytest.fixture(scope="module")
def two_profile_run(artifact, tmp_path_factory):
    guidelines, meta = load_memory(artifact)
    tasks = meta["simulated"]["tasks"][:40]
    select = {"none": lambda gs: [], "core_retrieval": lambda gs: [g for g in gs if g.support >= 3],
              "full": lambda gs: gs}
    blocks = {s: {t: render_guidelines(pick(guidelines)) for t in tasks} for s, pick in select.items()}
    rows = [row for name in ("strong", "small")
            for row in world.simulate_records(world.PROFILES[name], world.load_world(artifact), blocks, [1, 2])]
    run = tmp_path_factory.mktemp("width") / "sim"
    run.mkdir()
    (run / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return run


@pytest.mark.parametrize("args", [["--delta", "5"], ["--delta", "5", "--trials", "4"]])
def test_make_power_fits_160_columns(two_profile_run, args, capsys):
    assert power.main([str(two_profile_run), *args]) == 0
    out = capsys.readouterr().out
    assert "core_retrieval" in out and "memdeliv-simulated/small" in out
    assert widest(out) <= fmt.WIDTH, "\n".join(line for line in out.splitlines() if len(line) > fmt.WIDTH)
