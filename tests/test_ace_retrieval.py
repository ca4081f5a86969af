"""`ace_retrieval`: top-k playbook bullets, ACE's format, the no-leakage query rule, the LLM ranker's one reported
call, option checks before anything is written, and a meaningful choice in the simulated world."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from ace_fakes import FakeBagOfWordsEmbedder
from conftest import SAMPLE_MEMORY, read_records, run_in_process

import strategies
from harness.scripted import simulated_world as world
from strategies.ace.llm import JsonLLM
from strategies.ace.playbook import Playbook
from strategies.ace.retrieval import AceRetrieval
from strategies import ModelCall, StepView, TaskView, Trajectory
from strategies.base import calls_to
from strategies.ace.strategy import read_playbook_or_guidelines

LINE = r"^\[[a-z]+-\d{5}\] helpful=\d+ harmful=\d+ :: .+$"


def playbook() -> Playbook:
    pb = Playbook()
    for section, text in [("strategies", "Refund a cancelled flight to the original card."),
                          ("common_mistakes", "Never change a basic economy flight."),
                          ("heuristics", "Check the baggage allowance of the membership tier."),
                          ("strategies", "Confirm the new address before shipping an exchange.")]:
        pb, _ = pb.add(section, text)
    return pb


def user_says(text: str) -> StepView:
    return StepView(1, ({"role": "assistant", "content": "Hi! How can I help?"}, {"role": "user", "content": text}))


def test_top_k_bullets_in_ace_format_most_similar_kept_by_budget():
    strategy = AceRetrieval(playbook(), {"top_k": 2}, embedder=FakeBagOfWordsEmbedder())
    got = strategy.deliver(TaskView("tau2_airline", "1", ""), user_says("my flight was cancelled, I want a refund"))
    assert len(got.ids) == 2 and got.guidelines[0].text.startswith("Refund a cancelled flight")
    bullet_lines = [line for line in got.text.splitlines() if line.startswith("[")]
    assert len(bullet_lines) == 2 and all(re.match(LINE, line) for line in bullet_lines)
    assert "bullet_ids" in got.text and got.text.startswith("<ace_playbook>")  # cite line as `ace` renders it
    # the same ids the playbook has, so cited ids and counters refer to the same bullets
    assert set(got.ids) <= {b.id for b in strategy.playbook.bullets}
    # a budget drops the least similar first
    tight = AceRetrieval(playbook(), {"top_k": 2, "budget_tokens": len(got.text) // 4 - 10},
                         embedder=FakeBagOfWordsEmbedder(), count_tokens=lambda t: len(t) // 4)
    cut = tight.deliver(TaskView("tau2_airline", "1", ""), user_says("my flight was cancelled, I want a refund"))
    assert cut.ids == got.ids[:1] and cut.dropped == (got.ids[1],) and "omitted" in cut.text
    assert AceRetrieval(playbook(), {"top_k": 0}).deliver(TaskView("a", "1", "x"), StepView(0)).empty


def test_query_is_only_what_the_agent_has_seen():
    embedder = FakeBagOfWordsEmbedder()
    seen: list[str] = []
    embed = embedder.embed
    embedder.embed = lambda texts: (seen.extend(texts), embed(texts))[1]
    strategy = AceRetrieval(playbook(), {"top_k": 1}, embedder=embedder)
    bullet_texts = list(seen)
    greeting = StepView(0, ({"role": "assistant", "content": "Hi! How can I help?"},))
    assert strategy.deliver(TaskView("tau2_airline", "7", ""), greeting).empty  # nothing before the user speaks
    assert seen == bullet_texts
    strategy.deliver(TaskView("tau2_airline", "7", ""), user_says("I want to change my address."))
    assert seen[-1] == "I want to change my address."
    strategy.deliver(TaskView("appworld", "a_1", "Pay my phone bill."), StepView(0))  # a task stated up front
    assert seen[-1] == "Pay my phone bill."


def fake_completion(answers: list[str]):
    calls = []

    def completion(model, messages, **kwargs):
        calls.append(messages)
        return {"choices": [{"message": {"content": answers[len(calls) - 1]}}],
                "usage": {"prompt_tokens": 100, "completion_tokens": 7}}

    completion.calls = calls
    return completion


def test_llm_ranker_picks_known_ids_and_reports_its_one_call():
    pb = playbook()
    ids = [b.id for b in pb.bullets]
    completion = fake_completion([json.dumps({"bullet_ids": [ids[2], "err-99999", ids[0], ids[1]]})])
    ranker = JsonLLM(model="memdeliv-test/unpriced", completion=completion)
    strategy = AceRetrieval(pb, {"top_k": 2, "ranker": "llm"}, ranker=ranker)
    task = TaskView("tau2_airline", "3", "")
    reported: list[ModelCall] = []
    with calls_to(reported.append):  # what the harness binds to the episode's ledger (tests/test_strategy_calls.py)
        got = strategy.deliver(task, user_says("baggage question"))
        strategy.deliver(task, user_says("baggage question"))  # the same task and query: no second call
    assert got.ids == [ids[0], ids[2]]  # the first two known ids the model named, shown in playbook order
    assert "baggage question" in completion.calls[0][1]["content"] and pb.bullets[3].line in completion.calls[0][1]["content"]
    assert len(completion.calls) == 1
    assert reported == [ModelCall(role="ace_ranker", model="memdeliv-test/unpriced", prompt_tokens=100,
                                  completion_tokens=7, cost_usd=None)]  # no price: unknown, never 0
    facts = strategy.record_facts(Trajectory(task, (), 1.0, True, episode="3#0"))
    assert not any(key.startswith("strategy_") for key in facts)  # the calls are the ledger's, not a fact


def test_registered_with_options_checked():
    assert "ace_retrieval" in strategies.available()
    strategies.validate_options("ace_retrieval", {"top_k": 80, "ranker": "llm", "ranker_kwargs": {"temperature": 0}})
    for bad, message in [({"ranker": "bm25"}, "ranker='bm25'"), ({"top_k": -1}, "top_k must be >= 0"),
                         ({"top_k": "five"}, "must be an integer"), ({"ranker_kwargs": 3}, "mapping")]:
        with pytest.raises(ValueError, match=message):
            strategies.validate_options("ace_retrieval", bad)


@pytest.mark.parametrize("override, expected", [("strategy.options.ranker=bm25", "ranker='bm25'"),
                                                ("strategy.options.top_k=-3", "top_k must be >= 0")])
def test_bad_option_exits_2_with_no_run_directory(override, expected, runs_dir):
    proc = run_in_process("model=oracle", "strategy=none,ace_retrieval", override, f"memory={SAMPLE_MEMORY}",
                          "benchmark.limit=1", "run_name=bad", runs_dir=runs_dir, multirun=True)
    assert proc.returncode == 2 and expected in proc.stderr, proc.stderr[-2000:]
    assert not runs_dir.exists()


def test_meaningful_in_the_simulated_world(artifact):
    """Embedding retrieval on the user's request finds the planted helpers far more often than chance."""
    from memory_kit.embeddings import make_embedder

    w = world.load_world(artifact)
    pb, meta = read_playbook_or_guidelines(artifact)
    requests = _requests(w)
    strategy = AceRetrieval(pb, {"top_k": 5}, embedder=make_embedder("minilm", cache_dir=None), meta=meta)
    found = chance = 0.0
    for task_id, request in requests.items():
        delivered = world.read_lines(world.rendered_lines(
            strategy.deliver(TaskView("tau2_retail", task_id, ""), user_says(request)).text), w).delivered
        assert len(delivered) == 5
        found += len(w.relevant_ids(task_id, delivered))
        chance += 5 * len(w.relevant_ids(task_id, w.texts)) / len(w.texts)
    assert found > 1.5 * chance, (found, chance)


def _requests(w: world.World) -> dict[str, str]:
    """Each test task's request as the simulated user states it (its reason for calling)."""
    from harness.memory.simulated import _bench

    return {str(t.id): t.user_scenario.instructions.reason_for_call for t in _bench("tau2_retail", "test").tasks()}


@pytest.mark.parametrize("model", ["simulated", "oracle"])
def test_a_real_job_runs(model, artifact, tmp_path):
    from harness.run import compose_job
    from harness.runner import run_job

    extra = [f"model.world={artifact}"] if model == "simulated" else []
    cfg = compose_job([f"model={model}", *extra, "strategy=ace_retrieval", f"memory={artifact}",
                       "benchmark.task_ids=['5']", f"runs_dir={tmp_path}", "run_name=r", "progress=false"])
    summary = run_job(cfg)
    [record] = read_records(Path(summary["run_dir"]))
    assert record["strategy"] == "ace_retrieval" and record["error"] is None, record
    assert len(record["delivered"][0]) == 5 and record["memory_tokens"] > 0
    assert "cited_steps" in record
    if model == "simulated":  # the agent read those 5 bullets: its p is the analytic one for what was delivered
        from harness.scripted.simulated import parse_tag
        from tau2.data_model.simulation import Results

        sim = Results.load(Path(summary["run_dir"]) / record["trajectory"]).simulations[0]
        tag = [t for t in (parse_tag(m.content) for m in sim.messages if m.role == "assistant" and m.content) if t][-1]
        w = world.load_world(artifact)
        pb, _ = read_playbook_or_guidelines(artifact)
        texts = {b.id: b.content for b in pb.bullets}
        block = "\n".join(f"[{i}] helpful=0 harmful=0 :: {texts[i]}" for i in record["delivered"][0])
        assert tag["p"] == pytest.approx(world.expected_p(world.PROFILES["strong"], w, "5", block), abs=1e-9)
        assert tag["relevant"] >= 1 and tag["success"] == record["success"]


def test_the_rankers_calls_are_costed_in_the_tables(tmp_path):
    from analysis.tables import analyse, write

    run = tmp_path / "run"
    run.mkdir()
    base = {"run": "run", "benchmark": "tau2_retail", "split": "test", "model": "m", "error": None, "trial": 0,
            "prompt_tokens": 1000, "completion_tokens": 50, "cost_usd": 0.01, "user_cost_usd": 0.0,
            "judge_cost_usd": 0.0, "memory_tokens": 10}
    rows = [{**base, "job": "j/none", "strategy": "none", "task_id": str(t), "success": t % 2 == 0}
            for t in range(4)]
    priced = [0.002, 0.0, 0.002, 0.0]  # one call per task, billed on its first episode
    rows += [{**base, "job": "j/ace_retrieval", "strategy": "ace_retrieval", "task_id": str(t), "success": True,
              "strategy_calls": int(c > 0), "strategy_prompt_tokens": 300 * int(c > 0),
              "strategy_completion_tokens": 20 * int(c > 0), "strategy_cost_usd": c} for t, c in enumerate(priced)]
    (run / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    summary = analyse([str(run)], n_boot=50).summary.set_index("strategy")
    assert summary.loc["ace_retrieval", "strategy_calls/task"] == 0.5
    assert summary.loc["ace_retrieval", "strategy_tokens/task"] == 160
    assert summary.loc["ace_retrieval", "usd_strategy/task"] == pytest.approx(0.001)
    assert summary.loc["ace_retrieval", "usd/task"] == pytest.approx(0.011)  # agent + the ranker
    assert summary.loc["none", "usd_strategy/task"] == 0 and summary.loc["none", "usd/task"] == pytest.approx(0.01)
    unpriced = [{**r, "strategy_cost_usd": None} if r.get("strategy_calls") else r for r in rows]
    (run / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in unpriced))
    result = analyse([str(run)], n_boot=50)
    assert pd_isna(result.summary.set_index("strategy").loc["ace_retrieval", "usd/task"])  # unknown, not 0
    write(result, tmp_path / "out", plot=False)
    assert "USD strategy/task" in (tmp_path / "out" / "strategies.md").read_text()


def pd_isna(value) -> bool:
    import pandas as pd

    return bool(pd.isna(value))
