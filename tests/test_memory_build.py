"""Extraction -> consolidation -> support counts, with a SCRIPTED reflector (tests/scripted_reflector.py)."""

from __future__ import annotations

import json

import pytest

from scripted_reflector import MODEL, install
from strategies import TaskView, Trajectory
from memory_kit.consolidation import consolidate
from memory_kit.embeddings import make_embedder
from memory_kit.extraction import extract
from memory_kit.llm_json import litellm_llm

CONFIRM = ["Confirm the order id with the user before cancelling an order.",
           "Before cancelling, confirm the order ID with the user.",
           "Always confirm which order the user means before you cancel it."]
RETURN_ID = "Confirm the order id with the user before exchanging an order."  # close in words, another rule
REFUND = ["Check the refund payment method before issuing a return.",
          "Verify the refund payment method before processing a return."]
AUTH = "Authenticate the user by email or by name and zip code before any lookup."


def reply(*texts: str, category: str = "strategy") -> str:
    return json.dumps({"guidelines": [{"text": t, "rationale": "seen in the episode", "category": category,
                                       "trigger": "order request"} for t in texts]})


def traj(task_id: str, success: bool) -> Trajectory:
    view = TaskView("tau2_retail", task_id, f"task {task_id}: the user wants help with an order")
    msgs = ({"role": "user", "content": "Hi, I need help."},
            {"role": "assistant", "content": None,
             "tool_calls": [{"function": {"name": "get_order_details", "arguments": '{"order_id": "#1"}'}}]},
            {"role": "tool", "content": "x" * 2000})
    return Trajectory(task=view, messages=msgs, reward=float(success), success=success)


@pytest.fixture()
def reflector():
    handler = install()
    handler.rule_of = {**{t: "confirm-cancel" for t in CONFIRM}, RETURN_ID: "confirm-return",
                       **{t: "refund-method" for t in REFUND}, AUTH: "auth"}
    return handler


@pytest.fixture(scope="module")
def embedder():
    return make_embedder("minilm", cache_dir=None)


def test_supports_count_distinct_tasks_and_merges_are_recorded(reflector, embedder):
    script = {
        "A": [reply(CONFIRM[0], AUTH)],
        "B": [reply(CONFIRM[1])],
        "C": [reply(CONFIRM[2], RETURN_ID)],
        "D": [reply(*REFUND, category="recovery")],  # the same rule twice within one task
        "E": ["Sure! Here are my thoughts, no JSON.", reply(AUTH)],  # invalid first, valid on retry
        "F": ["not json", "{still not json"],  # invalid twice: skipped, logged
        "G": [reply(*[f"Rule number {i}." for i in range(4)]), reply(*[f"Rule {i}." for i in range(5)])],  # too many twice: skipped
    }
    successes = {"A": False, "B": False, "C": False, "D": False, "E": True, "F": False, "G": False}
    trajectories = [traj(t, successes[t]) for t in script]
    reflector.replies = {t.task.description: list(script[t.task.task_id]) for t in trajectories}
    llm = litellm_llm(MODEL)

    extractions = [extract(t, llm, ground_truth=True) for t in trajectories]  # the outcome sets the 1-3 / 0-2 rule
    by_task = {x.source: x for x in extractions}
    assert [len(by_task[t].guidelines) for t in "ABCDEFG"] == [2, 1, 2, 2, 1, 0, 0]
    assert by_task["F"].error and by_task["G"].error and "needs 1 to 3" in by_task["G"].error
    assert sum(call == "extract:" + trajectories[4].task.description for call in reflector.calls) == 2

    extracted = [g for x in extractions for g in x.guidelines]
    result = consolidate(extracted, embedder, llm, threshold=0.80)
    by_text = {g.text: g for g in result.guidelines}

    confirm = by_text[CONFIRM[0]]  # the survivor keeps the first wording
    assert confirm.support == 3 and set(confirm.source_task_ids) == {"A", "B", "C"}
    assert CONFIRM[1] not in by_text and CONFIRM[2] not in by_text
    assert by_text[REFUND[0]].support == 1 and REFUND[1] not in by_text  # twice in one task: support 1
    assert by_text[AUTH].support == 2  # A and E
    assert by_text[RETURN_ID].support == 1  # similar words, judged a different rule: kept apart
    assert len(result.guidelines) == 4

    merges = {(m.merged, m.into) for m in result.merges}
    assert merges == {("x-B-1", "x-A-1"), ("x-C-1", "x-A-1"), ("x-D-2", "x-D-1"), ("x-E-1", "x-A-2")}
    assert {m.decided_by for m in result.merges if m.merged == "x-E-1"} == {"identical"}  # same text, no judge
    assert f"merge:{RETURN_ID}" in reflector.calls  # the judge was asked and said no
    assert not result.failed_decisions


def test_invalid_merge_decision_keeps_both(reflector, embedder):
    first = extract(traj("A", False), _fixed(reply(CONFIRM[0]))).guidelines
    second = extract(traj("B", False), _fixed(reply(CONFIRM[1]))).guidelines
    result = consolidate(first + second, embedder, _fixed('{"same_as": "no-such-id"}'), threshold=0.8)
    assert [g.support for g in result.guidelines] == [1, 1]
    assert result.failed_decisions and "no-such-id" in result.failed_decisions[0]["error"]


def test_extraction_survives_a_failing_provider():
    def broken(messages):
        raise ConnectionError("provider down")

    out = extract(traj("A", False), broken)
    assert out.guidelines == () and "provider down" in out.error


def _fixed(text: str):
    return lambda messages: text
