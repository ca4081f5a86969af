"""exp_rag (Evo-Memory's ExpRAG) and long_context: their reference defaults, what they deliver, and that their
experiences artifact is learned from train only (built from a SCRIPTED oracle run on train, no language model)."""

from __future__ import annotations

import re

from pathlib import Path

import pytest
import yaml

import strategies
from ace_fakes import FakeBagOfWordsEmbedder
from conftest import REPO, SAMPLE_MEMORY, main_in_process, read_records, run_in_process
from harness.provenance import HELD_OUT, ProvenanceError, check_use
from strategies import Guideline, StepView, StrategyContext, TaskView
from memory_kit.memory_file import load_memory
from strategies.exp_rag import ExpRag
from strategies.exp_rag.strategy import ExpRagOptions
from memory_kit.experiences import KIND
from strategies.long_context import LongContext


def _experiences() -> tuple[Guideline, ...]:
    tasks = {"1": "refund my blue shoes order", "2": "change the shipping address of my order",
             "3": "cancel the pending order for shoes", "4": "update my payment method",
             "5": "exchange the shoes for a bigger size", "6": "what is the status of my laptop order"}
    return tuple(Guideline(id=f"exp-{t}", text=f"Task: {q} | Actions: step_{t}()", source_task_ids=(t,),
                           source_task_text=q, rationale="success" if int(t) % 2 else "failure")
                 for t, q in tasks.items())


def _view(text: str) -> TaskView:
    return TaskView(benchmark="b", task_id="q", description=text)


def test_exp_rag_defaults_are_evo_memory_exprags_and_the_config_says_the_same():
    # Evo-Memory's ExpRAG (arXiv 2511.20857; official code unreleased): zhaosnw/evo_mem agents/exprag.py,
    # top_k=4 experiences by embedding similarity of the task input, include_feedback=True
    opts = ExpRagOptions()
    assert (opts.top_k, opts.include_feedback, opts.embedder) == (4, True, "minilm")
    for name, cls in (("exp_rag", ExpRagOptions), ("long_context", None)):
        cfg = yaml.safe_load((REPO / "configs" / "strategy" / f"{name}.yaml").read_text())
        assert cfg["name"] == name and name in strategies.available()
        if cls is not None:
            assert cfg["options"] == {k: getattr(cls(), k) for k in cfg["options"]}
    # k's source is named as what it is: an unofficial port, not Evo-Memory's paper or code
    for text in ((REPO / "strategies" / "exp_rag" / "strategy.py").read_text(), (REPO / "configs" / "strategy" / "exp_rag.yaml")
                 .read_text(), (REPO / "docs" / "strategies.md").read_text()):
        assert re.search(r"unofficial port[^.]*zhaosnw/evo_mem|zhaosnw/evo_mem[^.]*unofficial port", text, re.S)


def test_exp_rag_delivers_the_top_k_most_similar_tasks_with_their_outcome():
    rag = ExpRag(experiences=_experiences(), embedder=FakeBagOfWordsEmbedder())
    delivery = rag.deliver(_view("shoes"), StepView(0))
    assert len(delivery.ids) == 4 and set(delivery.ids[:3]) == {"exp-1", "exp-3", "exp-5"}  # the shoe tasks first
    assert "- [exp-1] Outcome: success | Task: refund my blue shoes order" in delivery.text
    assert "Outcome: failure" not in ExpRag(options={"include_feedback": False, "top_k": 1},
                                            experiences=_experiences(),
                                            embedder=FakeBagOfWordsEmbedder()).deliver(
        _view("update my payment"), StepView(0)).text
    # nothing seen yet (τ² before the user speaks): nothing retrieved
    assert ExpRag(experiences=_experiences(), embedder=FakeBagOfWordsEmbedder()).deliver(
        TaskView("b", "q", ""), StepView(0)).empty


def test_long_context_delivers_every_episode_and_refit_drops_the_later_ones_first():
    items = _experiences()
    delivery = LongContext(experiences=items).deliver(_view("anything"), StepView(0))
    assert delivery.ids == [g.id for g in items]
    assert delivery.refit is not None
    smaller = delivery.refit(len(delivery.text) // 8)  # tokens: about a quarter of the block
    assert smaller.ids == [g.id for g in items][: len(smaller.ids)] and 0 < len(smaller.ids) < len(items)
    assert "lower-priority experiences omitted" in smaller.text
    assert set(smaller.dropped) == {g.id for g in items[len(smaller.ids):]}


@pytest.mark.parametrize("name", ["exp_rag", "long_context"])
def test_a_guideline_file_is_refused_as_an_experiences_artifact(name):
    with pytest.raises(ValueError, match="needs an experiences artifact.*make experiences"):
        strategies.create(name, StrategyContext(memory_path=str(SAMPLE_MEMORY)))


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """An experiences artifact built from a SCRIPTED oracle `none` run on 3 train tasks."""
    runs = tmp_path_factory.mktemp("runs")
    done = main_in_process("harness.memory.experiences", "--name", "t", "--runs-dir", str(runs), "--", "model=oracle",
                           "benchmark=tau2_retail", "benchmark.limit=3", "progress=false")
    assert done.returncode == 0, done.stderr[-2000:]
    return runs, runs / "memory" / "t" / "experiences.jsonl"


def test_the_artifact_learns_from_train_only(built, tmp_path):
    runs, artifact = built
    items, meta = load_memory(artifact)
    learned = meta["learned_from"]
    assert meta["kind"] == KIND and learned["split"] == "train" and learned["ground_truth"] is True
    assert len(items) == 3 and {g.source_task_ids[0] for g in items} == set(learned["task_ids"])
    assert all(g.rationale in ("success", "failure") and g.text.startswith("Task: ") for g in items)
    assert check_use(meta, "tau2_retail", ["x-test-task"], False) == HELD_OUT
    with pytest.raises(ProvenanceError, match="in-sample"):  # scored on the tasks it learned from: refused
        check_use(meta, "tau2_retail", learned["task_ids"][:1], False)
    refused = main_in_process("harness.memory.experiences", "--name", "u", "--runs-dir", str(tmp_path), "--",
                              "model=oracle", "benchmark.split=test")
    assert refused.returncode == 2 and "train split only" in refused.stderr and not (tmp_path / "memory").exists()


def test_a_sweep_delivers_experiences_and_refuses_them_on_their_own_tasks(built):
    runs, artifact = built
    base = ["model=oracle", "strategy=exp_rag,long_context", "benchmark=tau2_retail",
            f"+memory_by_strategy.exp_rag={artifact}", f"+memory_by_strategy.long_context={artifact}"]
    done = run_in_process(*base, "benchmark.split=test", "benchmark.limit=1", "run_name=sweep", runs_dir=runs,
                          multirun=True)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = read_records(runs / "sweep")
    assert {r["strategy"] for r in rows} == {"exp_rag", "long_context"}
    long_rows = [r for r in rows if r["strategy"] == "long_context"]
    assert all(r["memory_provenance"] == HELD_OUT for r in rows) and all(r["memory_tokens"] > 0 for r in long_rows)
    refused = run_in_process(*base, "benchmark.split=train", "benchmark.limit=1", "run_name=ins", runs_dir=runs,
                             multirun=True)
    assert refused.returncode == 2 and "in-sample" in refused.stderr and not Path(runs / "ins").exists()
