"""A strategy's own model calls go through the one accounting path: the episode's token ledger (issue 27).

Strategies import no harness code; they report each call (strategies.base.report_call) and the harness binds that
hook to the episode's ledger, so the calls land on the row of the episode that made them: ace_retrieval's LLM ranker
during the episode, ace_online's Reflector and Curator in the update after it. SCRIPTED / FAKE models only."""

from __future__ import annotations

import json
import threading

import pytest
from ace_fakes import MODEL, install_scripted_roles
from conftest import read_records

from harness import ledger
from harness.run import compose_job
from harness.runner import run_job
from strategies.ace.llm import JsonLLM
from strategies.ace.playbook import Playbook
from strategies.ace.retrieval import AceRetrieval
from strategies import StepView, TaskView
from memory_kit.prices import price_of

def strategy_usage(fields: dict) -> dict:
    """The strategy role of a row's (or a ledger's) usage by role; {} when it made no call."""
    return fields["usage"].get("strategy", {})


def ranker_strategy(model: str) -> AceRetrieval:
    pb, _ = Playbook().add("strategies", "Refund a cancelled flight to the original card.")

    def completion(model, messages, **kwargs):  # FAKE provider: names the one bullet, 100 + 7 tokens
        return {"choices": [{"message": {"content": json.dumps({"bullet_ids": [pb.bullets[0].id]})}}],
                "usage": {"prompt_tokens": 100, "completion_tokens": 7}}

    return AceRetrieval(pb, {"top_k": 1, "ranker": "llm"}, ranker=JsonLLM(model=model, completion=completion))


def step(text: str) -> StepView:
    return StepView(1, ({"role": "user", "content": text},))


def test_the_rankers_calls_land_in_the_ledger_of_the_episode_that_made_them():
    priced, unpriced = "gpt-4o-mini", "memdeliv-test/unpriced"
    price = price_of(priced)
    assert price is not None  # LiteLLM's bundled map prices it
    strategy = ranker_strategy(priced)
    with ledger.episode() as spent:
        strategy.deliver(TaskView("tau2_airline", "1", ""), step("my flight was cancelled"))
        strategy.deliver(TaskView("tau2_airline", "1", ""), step("my flight was cancelled"))  # cached: no call
        strategy.deliver(TaskView("tau2_airline", "2", ""), step("a refund please"))
    fields = spent.record_fields()
    assert strategy_usage(fields) == {"calls": 2, "prompt": 200, "completion": 14,
                                      "cost": pytest.approx(2 * price.cost(100, 7))}
    agent = fields["usage"]["agent"]
    assert agent["prompt"] == 0 and agent["calls"] == 0  # kept apart from the agent's own figures

    mixed = ranker_strategy(unpriced)
    with ledger.episode() as spent:
        strategy.deliver(TaskView("tau2_airline", "3", ""), step("baggage"))
        mixed.deliver(TaskView("tau2_airline", "3", ""), step("baggage"))
    assert strategy_usage(spent.record_fields())["cost"] is None  # one unpriced call: unknown, never understated

    ranker_strategy(priced).deliver(TaskView("tau2_airline", "4", ""), step("seat"))  # outside any episode: no one
    with ledger.episode() as quiet:  # listens, and the next episode starts clean
        pass
    assert "strategy" not in quiet.record_fields()["usage"]  # no call, no role


def test_a_paid_embedding_is_a_strategy_call(monkeypatch):
    import litellm
    from types import SimpleNamespace

    from memory_kit.embeddings import LiteLLMEmbedder

    def embedding(model, input, **kwargs):  # FAKE provider: 5 tokens per text
        return SimpleNamespace(data=[{"index": i, "embedding": [1.0, float(i)]} for i in range(len(input))],
                               usage=SimpleNamespace(prompt_tokens=5 * len(input)))

    monkeypatch.setattr(litellm, "embedding", embedding)
    model = "text-embedding-3-small"
    with ledger.episode() as spent:
        LiteLLMEmbedder(model, batch_size=2).embed(["a", "b", "c"])  # two batches: two calls
    fields = spent.record_fields()
    used = strategy_usage(fields)
    assert (used["calls"], used["prompt"], used["completion"]) == (2, 15, 0)
    assert used["cost"] == pytest.approx(price_of(model).cost(10, 0) + price_of(model).cost(5, 0))


def test_concurrent_episodes_keep_their_own_calls():
    strategy = ranker_strategy("memdeliv-test/unpriced")
    counts: dict[int, int] = {}

    def episode(n: int) -> None:
        with ledger.episode() as spent:
            for i in range(n):
                strategy.deliver(TaskView("tau2_airline", f"{n}-{i}", ""), step(f"request {n} {i}"))
        counts[n] = strategy_usage(spent.record_fields())["calls"]

    threads = [threading.Thread(target=episode, args=(n,)) for n in (1, 2, 3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert counts == {1: 1, 2: 2, 3: 3}


def test_ace_online_rows_carry_each_updates_reflector_and_curator(runs_dir):
    install_scripted_roles()  # FAKE roles: 11 prompt + 7 completion tokens per call, unpriced
    common = ["model=oracle", "benchmark.limit=2", "concurrency=1", "progress=false", f"runs_dir={runs_dir}",
              "run_name=calls"]
    run_job(compose_job([*common, "strategy=ace_online", f"strategy.options.reflector_model={MODEL}",
                         f"strategy.options.curator_model={MODEL}", "strategy.options.dedup_threshold=null"]))
    run_job(compose_job([*common, "strategy=none"]))
    rows = read_records(runs_dir / "calls")
    history = [json.loads(line) for line in next((runs_dir / "calls" / "memory").iterdir())
               .joinpath("history.jsonl").read_text().splitlines()]
    usage = {h["episode"]: h["usage"] for h in history if h["event"] == "update"}
    online = [r for r in rows if r["strategy"] == "ace_online"]
    assert len(online) == 2 and len(usage) == 2
    for row in online:  # the row's strategy columns are the update's calls, as its history line counts them
        roles = usage[f"{row['task_id']}#{row['trial']}"]
        learning = row["usage"]["learning"]  # the update's calls: its own role, apart from the strategy's
        assert learning["calls"] == sum(u["calls"] for u in roles.values()) == 2
        assert learning["prompt"] == sum(u["prompt_tokens"] for u in roles.values()) == 22
        assert learning["completion"] == 14 and learning["cost"] is None and "strategy" not in row["usage"]
    assert not any(set(r["usage"]) & {"strategy", "learning"} for r in rows if r["strategy"] == "none")

    from analysis.runs.build_cost import add_build_cost
    from analysis import load_records
    from analysis import summarize

    records = load_records([runs_dir / "calls"])
    built = add_build_cost(summarize(records, n_boot=20), records).set_index("strategy")
    online_label = next(s for s in built.index if s.startswith("ace_online"))
    assert built.loc[online_label, "build_source"] == "learning billed per episode"  # not counted twice
    assert built.loc[online_label, "build_tokens"] == 0


def test_an_online_update_s_calls_are_a_role_beside_the_episode_s_own_calls():
    """An online learner whose episode made calls of its own (a ranker) and whose update made more: the row,
    built once the update is known, carries both roles, so the budget on resume and the tables count every call
    once, and the row the episode came with is not edited."""
    from types import SimpleNamespace

    from harness.records import Outcome, RowParts, build_row
    from harness.runner.budget import episode_cost
    from harness.runner.loop import with_update
    from strategies import Trajectory

    ranker = {"prompt": 100, "completion": 7, "cost": 0.01, "calls": 1}
    record = {"task_id": "1", "success": True, "usage": {"agent": {"calls": 0}, "strategy": ranker}}
    parts = RowParts({"job": "j"}, 0, record)
    outcome = Outcome(row=build_row(parts), parts=parts, trajectory=Trajectory(TaskView("b", "1", ""), (), 1.0, True))

    def after(update: dict):
        return with_update(SimpleNamespace(key="j"), outcome, lambda trajectory, task, trial: update,
                           {"1": object()}, None).row

    update = {"prompt": 22, "completion": 14, "cost": 0.02, "calls": 2}
    both = after({"usage": {"learning": update}, "update_lost": False})
    assert both.usage["strategy"] == ranker and both.usage["learning"] == update and both.update_lost is False
    assert episode_cost(both) == pytest.approx(0.03) and outcome.row.usage.keys() == {"agent", "strategy"}
    assert episode_cost(after({"usage": {"learning": {**update, "cost": None}}})) is None  # unknown, not $0.01
    assert after({"update_lost": True}).usage == outcome.row.usage  # an update without calls adds no role
