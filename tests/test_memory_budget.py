"""strategy.options.budget_tokens: each built-in strategy drops its own lowest-priority items first, says so
inside the block, and reports the dropped ids; the refit the request assembly uses follows the same order."""

from __future__ import annotations

import pytest

from ace_fakes import FakeBagOfWordsEmbedder
from strategies import Guideline, StepView, TaskView
from strategies.ace.playbook import Bullet, Playbook
from strategies.ace.strategy import AcePlaybook
from memory_kit.budget import fit_budget
from strategies import typed_options
from strategies.core_retrieval import CoreRetrieval
from strategies.full import FullMemory

TASK, STEP = TaskView("tau2_retail", "1", "refund a charged-twice payment"), StepView(0)


def words(text: str) -> int:  # a transparent token counter: one token per word
    return len(text.split())


def guidelines(*supports: int) -> tuple[Guideline, ...]:
    return tuple(Guideline(id=f"g{i}", text=f"rule number {i} about refunds", support=s, source_task_text=f"task {i}")
                 for i, s in enumerate(supports))


def test_full_keeps_the_highest_support_in_file_order_and_notes_the_rest():
    whole = FullMemory(guidelines=guidelines(1, 5, 2, 5, 1), count_tokens=words).deliver(TASK, STEP)
    assert whole.dropped == () and len(whole.ids) == 5 and "omitted" not in whole.text
    budget = words(FullMemory(guidelines=guidelines(5, 5, 2), count_tokens=words).deliver(TASK, STEP).text) + 10
    cut = FullMemory(options={"budget_tokens": budget}, guidelines=guidelines(1, 5, 2, 5, 1),
                     count_tokens=words).deliver(TASK, STEP)
    assert cut.ids == ["g1", "g2", "g3"] and set(cut.dropped) == {"g0", "g4"}  # display order kept
    assert "(2 lower-priority lessons omitted to fit the budget.)" in cut.text and words(cut.text) <= budget
    assert cut.text.index("omitted") < cut.text.index("</learned_guidelines>")  # inside the block
    smaller = cut.refit(budget - 8)
    assert smaller.ids == ["g1", "g3"] and set(smaller.dropped) == {"g0", "g2", "g4"}


def test_core_retrieval_drops_retrieved_least_similar_first_then_core():
    memory = (Guideline(id="core", text="always authenticate first", support=4),
              Guideline(id="near", text="refund the charged twice payment", support=1,
                        source_task_text="refund a payment charged twice"),
              Guideline(id="far", text="book a flight with miles and seats and bags and meals and upgrades", support=1,
                        source_task_text="book a flight"))
    opts = {"top_k": 2, "embed_cache": None, "kept_duplicate": 1.1, "core_duplicate": 1.1}
    whole = CoreRetrieval(options=opts, guidelines=memory, embedder=FakeBagOfWordsEmbedder(),
                          count_tokens=words).deliver(TASK, STEP)
    assert whole.ids == ["core", "near", "far"]
    size = words(whole.text)
    one = CoreRetrieval(options={**opts, "budget_tokens": size - 2}, guidelines=memory,
                        embedder=FakeBagOfWordsEmbedder(), count_tokens=words).deliver(TASK, STEP)
    assert one.ids == ["core", "near"] and one.dropped == ("far",)
    assert one.refit(size - 14).ids == ["core"]


def test_ace_drops_net_harmful_then_unused_then_oldest():
    pad = " and then some more words to make the line long"  # each line longer than the omission note
    bullets = [Bullet("str-00001", "strategies_and_insights", "old unused" + pad, created=1),
               Bullet("str-00002", "strategies_and_insights", "net harmful" + pad, helpful=1, harmful=3, created=2),
               Bullet("str-00003", "strategies_and_insights", "helpful one" + pad, helpful=4, created=3),
               Bullet("str-00004", "strategies_and_insights", "new unused" + pad, created=4)]
    full = words(AcePlaybook(Playbook(bullets), count_tokens=words).deliver(TASK, STEP).text)
    line, note = words(bullets[0].line), len("(1 lower-priority bullets omitted to fit the budget.)".split())
    ace = AcePlaybook(Playbook(bullets), count_tokens=words, options={"budget_tokens": full - line + note})
    d = ace.deliver(TASK, STEP)
    assert d.dropped == ("str-00002",) and "(1 lower-priority bullets omitted" in d.text
    assert set(d.refit(full - 2 * line + note).dropped) == {"str-00001", "str-00002"}
    assert [g.id for g in d.refit(full - 3 * line + note).guidelines] == ["str-00003"]


@pytest.mark.parametrize("bad", [0, -3, "10", 2.5, True])
def test_budget_tokens_must_be_a_positive_integer_or_null(bad):
    assert typed_options("full", {}).budget_tokens is None and typed_options("full", {"budget_tokens": 5}).budget_tokens == 5
    with pytest.raises(ValueError, match="budget_tokens"):
        typed_options("full", {"budget_tokens": bad})
    with pytest.raises(ValueError, match="budget_tokens"):
        FullMemory(options={"budget_tokens": bad}, guidelines=guidelines(1), count_tokens=words)


def test_a_budget_below_the_note_delivers_nothing_and_reports_every_id():
    d = fit_budget(guidelines(1, 2), [1, 2], lambda kept, note: " ".join([g.text for g in kept] + [note]), words, 1)
    assert d.empty and set(d.dropped) == {"g0", "g1"}
