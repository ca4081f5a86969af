"""ALTK-Evolve consolidation (`consolidation: altk`): clusters by SOURCE TASK similarity, one LLM call per
cluster that may reword, support = distinct source tasks. SCRIPTED consolidator (tests/scripted_reflector.py)
and a FAKE bag-of-words embedder: no language model, no real embedder."""

from __future__ import annotations

import json
import re

import pytest

from ace_fakes import FakeBagOfWordsEmbedder
from scripted_reflector import MODEL, install
from strategies import Guideline
from memory_kit.consolidation import consolidate
from memory_kit.consolidation_altk import cluster_by_source_task, consolidate_altk, consolidation_messages
from memory_kit.llm_json import litellm_llm

CANCEL_1 = "please cancel my pending order number W1 today"
CANCEL_2 = "please cancel my pending order number W2 today"  # 7 of 8 words shared: cosine 0.875
ADDRESS = "change the shipping address on my account"
CHECK = "Check that the order is pending before cancelling it."
CHECK_AGAIN = "Before a cancellation, verify the order status is pending."  # same rule, other words
REASON = "Ask for the cancellation reason before calling the cancel tool."  # same tasks, another rule


def g(gid: str, text: str, task_id: str, task_text: str) -> Guideline:
    return Guideline(id=gid, text=text, trigger="cancel request", source_task_ids=(task_id,),
                     source_task_text=task_text)


GUIDELINES = [
    g("x-1-1", CHECK, "1", CANCEL_1),
    g("x-1-2", CHECK_AGAIN, "1", CANCEL_1),  # the same rule twice from one task
    g("x-2-1", CHECK_AGAIN, "2", CANCEL_2),
    g("x-2-2", REASON, "2", CANCEL_2),
    g("x-3-1", CHECK, "3", ADDRESS),  # the very same text, learned on an unrelated task
]


@pytest.fixture()
def consolidator():
    handler = install()
    handler.rule_of = {CHECK: "check-pending", CHECK_AGAIN: "check-pending", REASON: "ask-reason"}
    handler.reworded = {"check-pending": "Verify the order is still pending before you cancel it."}
    return handler


def test_clusters_come_from_source_task_similarity_not_guideline_text():
    clusters, sims = cluster_by_source_task(GUIDELINES, FakeBagOfWordsEmbedder(), threshold=0.80)
    assert clusters == [[0, 1, 2, 3], [4]]  # task 3's guideline has CHECK's exact text but another task
    assert sims[0, 2] >= 0.80 > sims[0, 4]


def test_altk_consolidation_merges_within_a_cluster_with_one_call_and_counts_distinct_tasks(consolidator):
    result = consolidate_altk(GUIDELINES, FakeBagOfWordsEmbedder(), litellm_llm(MODEL), threshold=0.80)
    assert consolidator.calls == ["consolidate:4"] and result.llm_calls == 1  # one call for the one cluster
    by_id = {x.id: x for x in result.guidelines}
    merged = by_id["x-1-1"]
    assert merged.text == "Verify the order is still pending before you cancel it."  # reworded by the LLM
    assert merged.support == 2 and merged.source_task_ids == ("1", "2")  # 3 guidelines, 2 distinct tasks
    assert by_id["x-2-2"].support == 1 and by_id["x-2-2"].text == REASON  # another rule: kept separate
    assert by_id["x-3-1"].support == 1 and by_id["x-3-1"].text == CHECK  # not in the cluster: untouched
    assert len(result.guidelines) == 3 and {(m.merged, m.into) for m in result.merges} == {
        ("x-1-2", "x-1-1"), ("x-2-1", "x-1-1")}
    # the text mode merges by wording instead: task 3's identical text joins task 1's rule
    text = consolidate(GUIDELINES, FakeBagOfWordsEmbedder(), litellm_llm(MODEL), threshold=0.80)
    assert "3" in {x.id: x for x in text.guidelines}["x-1-1"].source_task_ids


def test_a_failed_consolidation_keeps_the_cluster_and_unclaimed_members(consolidator):
    result = consolidate_altk(GUIDELINES, FakeBagOfWordsEmbedder(), lambda messages: "no json", threshold=0.80)
    assert [x.id for x in result.guidelines] == [x.id for x in GUIDELINES] and result.failed_decisions
    partial = '{"guidelines": [{"text": "Verify pending first.", "source_indices": [0, 2, 99]}]}'
    result = consolidate_altk(GUIDELINES, FakeBagOfWordsEmbedder(), lambda messages: partial, threshold=0.80)
    by_id = {x.id: x for x in result.guidelines}
    assert by_id["x-1-1"].support == 2 and "x-2-1" not in by_id  # indices 0 and 2 merged, 99 ignored
    assert by_id["x-1-2"].text == CHECK_AGAIN and by_id["x-2-2"].text == REASON  # unclaimed: kept as they were


# --- modes: none | lossless | lossy (ALTK-Evolve's consolidation_mode) -------------------------------------------

def scripted_lossy_consolidator(calls: list[str]):
    """SCRIPTED (fake) consolidator, no language model: it obeys the lossy prompt's "aim for about N" by dealing
    the listed guidelines round-robin into min(N, inputs) groups, each reworded as "Merged rule k"."""
    def llm(messages):
        target = int(re.search(r"aim for about (\d+)", messages[0]["content"]).group(1))
        listed = [int(i) for i in re.findall(r"^\[(\d+)\] ", messages[1]["content"], re.M)]
        calls.append(f"consolidate:{len(listed)}")
        groups = [listed[k::min(target, len(listed))] for k in range(min(target, len(listed)))]
        return json.dumps({"guidelines": [{"text": f"Merged rule {k}", "source_indices": g}
                                          for k, g in enumerate(groups)]})
    return llm


FAMILIES = ["please cancel my pending order number {} today", "change the shipping address of order {} now",
            "return the damaged item from order {} for a refund"]
MANY = [Guideline(id=f"x-{t}-{k}", text=f"Rule {k} learned on task {t}.", source_task_ids=(str(t),),
                  source_task_text=FAMILIES[t % 3].format(f"W{t}")) for t in range(9) for k in range(3)]


def test_lossy_reaches_the_target_and_conserves_support():
    calls = []
    result = consolidate_altk(MANY, FakeBagOfWordsEmbedder(), scripted_lossy_consolidator(calls), mode="lossy",
                              target=4)
    assert calls == ["consolidate:9"] * 3 + ["consolidate:12"]  # three task clusters, then the target pass
    assert len(result.guidelines) <= 4 and result.llm_calls == 4
    counts = result.member_counts()  # ALTK-Evolve's support: inputs behind each output
    assert sum(counts.values()) == len(MANY) and min(counts.values()) >= 2
    tasks = [t for g in result.guidelines for t in g.source_task_ids]
    assert sorted(set(tasks)) == sorted({t for g in MANY for t in g.source_task_ids})  # no task loses credit
    assert all(g.support == len(set(g.source_task_ids)) for g in result.guidelines)
    assert {m.decided_by for m in result.merges} == {"llm-cluster", "llm-lossy-target"}


def test_lossy_keeps_what_the_model_will_not_merge():
    def ignores_target(messages):  # SCRIPTED: every input its own output
        listed = re.findall(r"^\[(\d+)\] (.*) \(trigger", messages[1]["content"], re.M)
        return json.dumps({"guidelines": [{"text": t, "source_indices": [int(i)]} for i, t in listed]})

    result = consolidate_altk(MANY, FakeBagOfWordsEmbedder(), ignores_target, mode="lossy", target=4)
    assert len(result.guidelines) == len(MANY) and sum(result.member_counts().values()) == len(MANY)


def test_none_keeps_every_guideline_without_a_call_and_lossless_is_the_default(consolidator):
    result = consolidate_altk(GUIDELINES, None, lambda messages: pytest.fail("no call expected"), mode="none")
    assert result.guidelines == GUIDELINES and result.llm_calls == 0 and not result.merges
    lossless = consolidate_altk(GUIDELINES, FakeBagOfWordsEmbedder(), litellm_llm(MODEL))
    assert len(lossless.guidelines) == 3 and sum(lossless.member_counts().values()) == len(GUIDELINES)
    assert "Merge liberally" not in consolidation_messages(GUIDELINES)[0]["content"]


@pytest.mark.parametrize("mode, target", [("lossyy", 12), ("lossy", 0), ("lossy", "12"), ("lossy", True)])
def test_bad_mode_or_target_is_refused(mode, target):
    with pytest.raises(ValueError, match="consolidation mode|target"):
        consolidate_altk(GUIDELINES, None, lambda messages: "", mode=mode, target=target)
