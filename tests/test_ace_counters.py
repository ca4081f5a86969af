"""ACE's counters against bad memory (analysis/ace_counters.py), on the SIMULATED world with planted relevance on
train and 30 % of the lessons contradicted: with ground truth, the counters mark corrupted lessons harmful more
often than clean ones, so ACE's pruning (highest harmful - helpful first) keeps fewer corrupted lessons than
clean ones; before adaptation (all counters zero) it cannot tell them apart that way."""

from __future__ import annotations

import pytest

from analysis.ace_counters import adapt, main
from harness.memory.corrupt import Spec, corrupt
from memory_kit.memory_file import save_memory


@pytest.fixture(scope="module")
def train_world(tmp_path_factory):
    from harness.memory.simulated import build

    root = tmp_path_factory.mktemp("ace_counters")
    guidelines, meta = build("tau2_retail", "train")  # relevance planted on the train tasks ACE adapts on
    save_memory(root / "world.jsonl", guidelines, meta)
    corrupt(root / "world.jsonl", root / "contradict_30.jsonl", Spec("contradict", 0.3))
    return root / "contradict_30.jsonl"


def test_counters_learn_which_lessons_mislead_and_pruning_drops_them(train_world):
    snaps = adapt(str(train_world), epochs=3, budgets=(0.5,))
    first, last = snaps[0], snaps[-1]
    assert first.corrupted_net_harmful == first.clean_net_harmful == 0  # nothing learned yet
    assert last.corrupted_net_harmful > last.clean_net_harmful + 0.1
    corrupted, clean = last.delivered[0.5]
    assert corrupted < clean - 0.15  # pruning by the learned counters drops corrupted lessons first
    assert 0 < last.success < 1 and len(snaps) == 4


def test_cli_prints_the_table_and_refuses_a_missing_artifact(train_world, tmp_path, capsys):
    assert main([str(train_world), "--epochs", "1", "--budget", "0.5"]) == 0
    out = capsys.readouterr().out
    assert "budget 50%: corrupted / clean" in out and "SIMULATED" in out
    assert main([str(tmp_path / "missing.jsonl")]) == 2
