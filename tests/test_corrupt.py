"""The corruption operator (harness/memory/corrupt.py): which lessons it corrupts, what it writes for each kind
and mode, on guidelines and on ACE playbooks, what it plants in the simulated world, the LLM rewriter's cache
and price, and the CLI's refusals."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import main_in_process

from harness.memory.corrupt import (
    CorruptionError,
    Spec,
    chosen,
    corrupt,
    parse_rates,
    series_path,
)
from harness.memory.corrupt_text import (
    LLMRewriter,
    near_copy,
    rule_contradict,
    unrelated,
)
from strategies import Guideline
from memory_kit.memory_file import load_memory, save_memory
from harness.scripted import simulated_world as world
from strategies.ace.playbook import KIND, Playbook, artifact_kind, load_playbook

LEARNED = {"benchmark": "tau2_retail", "split": "train", "task_ids": ["0", "1"], "ground_truth": False}


def lessons(n: int = 10) -> list[Guideline]:
    return [Guideline(id=f"g{i}", text=f"Before you refund order {i}, read back the amount; never guess an id.",
                      support=1 + i % 4, source_task_text=f"refund request {i}") for i in range(n)]


@pytest.fixture
def simulated(tmp_path) -> Path:
    """A tiny simulated-world artifact: g0..g9, g<i> helps task t<i>."""
    path = tmp_path / "world.jsonl"
    save_memory(path, lessons(), {"learned_from": LEARNED, "simulated": {
        "tasks": [f"t{i}" for i in range(10)], "helps": {f"g{i}": [f"t{i}"] for i in range(10)}}})
    return path


def test_rule_contradict_says_the_opposite_and_reverses_a_recipe():
    assert rule_contradict("Before you cancel, never guess an id.") == "After you cancel, always guess an id."
    recipe = 'For a request like "x" (train task 3), the order that worked: find user -> get order -> refund.'
    assert rule_contradict(recipe).endswith("the order that worked: refund -> get order -> find user.")
    assert rule_contradict("Use the cheapest option.") != "Use the cheapest option."  # always a change
    assert near_copy("Check it.", 0) != near_copy("Check it.", 6) and "check it." in near_copy("Check it.", 0)
    assert len(set(unrelated(150, 1))) == 150 and unrelated(5, 1) == unrelated(5, 1) != unrelated(5, 2)


def test_choice_is_seeded_nested_across_rates_and_can_follow_support():
    ids, supports = [f"g{i}" for i in range(20)], [1 + i % 4 for i in range(20)]
    low, high = chosen(ids, supports, Spec("contradict", 0.1)), chosen(ids, supports, Spec("contradict", 0.5))
    assert len(low) == 2 and len(high) == 10 and set(low) <= set(high)
    assert chosen(ids, supports, Spec("contradict", 0.5, seed=1)) != high
    weakest = chosen(ids, supports, Spec("contradict", 0.25, pick="low_support"))
    assert {supports[ids.index(g)] for g in weakest} == {1}
    assert {supports[ids.index(g)] for g in chosen(ids, supports, Spec("contradict", 0.25, pick="high_support"))} == {4}


def test_replace_keeps_ids_support_and_provenance_and_records_what_it_did(simulated, tmp_path):
    out = tmp_path / "bad.jsonl"
    facts = corrupt(simulated, out, Spec("contradict", 0.3, seed=7))
    guidelines, meta = load_memory(out)
    before = {g.id: g for g in lessons()}
    bad = [g for g in guidelines if g.text != before[g.id].text]
    assert sorted(g.id for g in bad) == facts["ids"] == meta["corrupted"]["ids"] and len(bad) == 3
    assert all(g.support == before[g.id].support and g.source_task_text == before[g.id].source_task_text for g in bad)
    assert meta["learned_from"] == LEARNED and meta["corrupted"]["kind"] == "contradict"
    assert meta["corrupted"]["rate"] == 0.3 and meta["corrupted"]["seed"] == 7 and meta["corrupted"]["rewriter"] == "rule"
    again = tmp_path / "again.jsonl"
    corrupt(simulated, again, Spec("contradict", 0.3, seed=7))
    assert again.read_text() == out.read_text()  # deterministic with a seed
    sim = meta["simulated"]  # planted: the corrupted lesson helps nothing and misleads where it used to help
    for g in bad:
        assert sim["helps"][g.id] == [] and sim["harms"][g.id] == [f"t{g.id[1:]}"]
    w = world.load_world(out)
    prof = world.PROFILES["strong"]
    g = bad[0]
    task = f"t{g.id[1:]}"
    block = f"- [{g.id}] {g.text}"
    assert world.expected_p(prof, w, task, block) == pytest.approx(prof.base - prof.harm)  # harmed
    clean = world.load_world(simulated)
    assert world.expected_p(prof, clean, task, f"- [{g.id}] {before[g.id].text}") == pytest.approx(prof.base + prof.lift)


@pytest.mark.parametrize("kind", ["stale", "irrelevant", "duplicate"])
def test_other_kinds_plant_no_harm_and_add_mode_keeps_every_lesson(kind, simulated, tmp_path):
    source = tmp_path / "airline.jsonl"
    save_memory(source, [Guideline(id=f"a{i}", text=f"Airline lesson {i}: rebook before refunding.", support=2)
                         for i in range(6)], {"learned_from": {**LEARNED, "benchmark": "tau2_airline"}})
    out = tmp_path / "bad.jsonl"
    facts = corrupt(simulated, out, Spec(kind, 0.4, mode="add"), source=source if kind == "stale" else None)
    guidelines, meta = load_memory(out)
    assert len(guidelines) == 14 and {g.id for g in lessons()} <= {g.id for g in guidelines}
    added = [g for g in guidelines if g.id in facts["ids"]]
    assert len(added) == 4 and len({g.text for g in guidelines}) == 14  # distinct texts: the world tells them apart
    assert all(meta["simulated"]["helps"][g.id] == [] for g in added) and not meta["simulated"]["harms"]
    if kind == "stale":
        assert all(g.text.startswith("Airline lesson") for g in added)
        assert meta["learned_from"]["started_from"]["benchmark"] == "tau2_airline"  # provenance sees its tasks
    elif kind == "irrelevant":
        assert all(g.text.startswith("When you ") for g in added)
    else:
        assert all(any(g.text.endswith(o.text[1:]) for o in lessons()) for g in added)


def test_stale_needs_a_source_and_out_must_differ(simulated, tmp_path):
    with pytest.raises(CorruptionError, match="needs --source"):
        corrupt(simulated, tmp_path / "x.jsonl", Spec("stale", 0.2))
    with pytest.raises(CorruptionError, match="is the input"):
        corrupt(simulated, simulated, Spec("contradict", 0.2))
    with pytest.raises(CorruptionError):
        Spec("contradict", 1.5)


def test_an_ace_playbook_stays_a_playbook(tmp_path):
    pb = Playbook.from_guidelines(lessons(5))
    pb = pb.put(dataclasses.replace(pb.bullets[0], helpful=3))
    src = tmp_path / "playbook.jsonl"
    pb.save(src, {"learned_from": LEARNED})
    corrupt(src, tmp_path / "replaced.jsonl", Spec("contradict", 1.0))
    replaced, meta = load_playbook(tmp_path / "replaced.jsonl")
    assert artifact_kind(tmp_path / "replaced.jsonl") == KIND and meta["learned_from"] == LEARNED
    assert [b.id for b in replaced.bullets] == [b.id for b in pb.bullets]  # same ids, counters kept
    assert replaced.bullets[0].helpful == 3 and all(a.content != b.content for a, b in zip(replaced.bullets, pb.bullets))
    corrupt(src, tmp_path / "added.jsonl", Spec("duplicate", 0.4, mode="add"))
    added, meta = load_playbook(tmp_path / "added.jsonl")
    assert len(added) == 7 and len(meta["corrupted"]["ids"]) == 2 and all(i not in pb for i in meta["corrupted"]["ids"])


def test_llm_rewriter_is_cached_and_priced(tmp_path):
    calls = []

    def fake(model, messages, **kwargs):
        calls.append(messages[-1]["content"])
        text = "" if "empty" in messages[-1]["content"] else "Always refund first, never ask."
        return SimpleNamespace(choices=[SimpleNamespace(message=SimpleNamespace(content=text))],
                               usage=SimpleNamespace(prompt_tokens=100, completion_tokens=10))

    rewriter = LLMRewriter("gpt-4o", tmp_path / "cache", complete=fake)
    assert rewriter("Ask before you refund.") == "Always refund first, never ask."
    assert rewriter("Ask before you refund.") == "Always refund first, never ask." and len(calls) == 1
    assert rewriter("empty answer, before") == rule_contradict("empty answer, before")  # unusable answer: rules
    facts = rewriter.facts()
    assert facts["calls"] == 2 and facts["cached"] == 1 and facts["fallbacks"] == 1
    assert facts["prompt_tokens"] == 200 and facts["cost_usd"] > 0  # gpt-4o is in LiteLLM's bundled price map
    fresh = LLMRewriter("gpt-4o", tmp_path / "cache", complete=fake)  # a rerun: from the cache, free
    assert fresh("Ask before you refund.") == "Always refund first, never ask." and fresh.facts()["cost_usd"] == 0
    assert LLMRewriter("no-such/model", tmp_path / "c2", complete=fake).facts()["cost_usd"] is None
    offline = LLMRewriter("gpt-4o", tmp_path / "c3", kwargs={"mock_response": "Refund first, never ask."})
    assert offline("Ask before you refund.") == "Refund first, never ask."  # through litellm.completion itself
    assert offline.facts()["calls"] == 1 and offline.facts()["cost_usd"] > 0


def test_rates_and_series_names():
    assert parse_rates("0,0.1,30%,0.5") == [0.0, 0.1, 0.3, 0.5]
    assert series_path("d", "contradict", 0.3) == Path("d/contradict_30.jsonl")
    for bad in ("20", "x", ""):
        with pytest.raises(CorruptionError):
            parse_rates(bad)


def test_cli_writes_a_series_and_refuses_bad_input_with_exit_2(simulated, tmp_path):
    def cli(*args):
        return main_in_process("harness.memory.corrupt", str(simulated), *args)

    done = cli("--kind", "contradict", "--rate", "0,0.1,0.3,0.5", "--out", str(tmp_path / "series"))
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in (tmp_path / "series").iterdir()) == [
        "contradict_0.jsonl", "contradict_10.jsonl", "contradict_30.jsonl", "contradict_50.jsonl"]
    assert json.loads((tmp_path / "series" / "contradict_0.jsonl").read_text().splitlines()[0])["_meta"][
        "corrupted"]["ids"] == []
    for args in (("--kind", "contradict", "--rate", "20"), ("--kind", "stale", "--rate", "0.2")):
        bad = cli(*args, "--out", str(tmp_path / "bad.jsonl"))
        assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "corrupt:" in bad.stderr
        assert not (tmp_path / "bad.jsonl").exists()
