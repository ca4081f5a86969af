"""`on_demand` (strategies/on_demand/strategy.py, docs/memory-tools.md): its recall tool ranked by core_retrieval's retriever,
a τ² episode whose SCRIPTED agent (not a language model) calls it natively, malformed, or in the prompted text
format, and the simulated world's planted pull."""

from __future__ import annotations

import json

import pytest
from litellm import CustomLLM, ModelResponse

from ace_fakes import FakeBagOfWordsEmbedder
from conftest import SAMPLE_MEMORY, compose, read_records
from harness.runner import run_job
from harness.scripted import simulated
from harness.scripted.oracle import DONE_MARKER, ScriptedOracle, install
from harness.serving.providers import register_provider, unregister_provider
from harness.scripted import simulated_world
import strategies
from memory_kit.memory_file import load_memory
from strategies import Guideline, StepView, TaskView
from strategies.on_demand import OnDemand
from strategies.on_demand.strategy import NOTICE, TOOL

PROVIDER = "memdeliv-test-puller"
TASK = TaskView("tau2_retail", "5", "")


def lessons():
    return (Guideline("core1", "always confirm the user id first", support=4, source_task_text="any request"),
            Guideline("r1", "exchange delivered items with the exchange tool", source_task_text="exchange boots"),
            Guideline("r2", "cancel a pending order only after asking", source_task_text="cancel my order"),
            Guideline("r3", "return items to the original payment", source_task_text="return a lamp refund"),
            Guideline("r4", "modify the address of a pending order", source_task_text="change order address"))


def test_the_prompt_has_only_the_notice_and_the_tool_recalls_the_top_3_by_the_retriever():
    strategy = OnDemand(options={}, guidelines=lessons(), embedder=FakeBagOfWordsEmbedder())
    delivery = strategy.deliver(TASK, StepView(0))
    assert delivery.text == NOTICE and delivery.ids == [] and [t.name for t in delivery.tools] == [TOOL]
    answer = delivery.tools[0].answer({"query": "I want to exchange my boots"})
    assert answer.ids[0] == "r1" and len(answer.ids) == 3  # STATE-Bench's top_k, the best match first
    assert TOOL == simulated_world.PULL_TOOL  # the tool the simulated agent knows how to call


def test_core_true_puts_the_core_in_the_prompt_and_recalls_only_the_rest():
    strategy = OnDemand(options={"core": True, "top_k": 2}, guidelines=lessons(), embedder=FakeBagOfWordsEmbedder())
    delivery = strategy.deliver(TASK, StepView(0))
    assert delivery.ids == ["core1"] and "[core1]" in delivery.text and delivery.text.endswith(NOTICE)
    answer = delivery.tools[0].answer({"query": "cancel my order"})
    assert answer.ids[0] == "r2" and len(answer.ids) == 2 and "core1" not in answer.ids


@pytest.mark.parametrize("options, match", [({"core": "yes"}, "core must be true or false"),
                                            ({"rerank_each_step": True}, "unknown option"),
                                            ({"top_k": -1}, "top_k must be >= 0")])
def test_bad_options_are_refused_with_a_reason(options, match):
    with pytest.raises(ValueError, match=match):
        strategies.validate_options("on_demand", options)


class Puller(CustomLLM):
    """SCRIPTED agent (not a language model): its first step calls recall_guidelines (`mode`: native, malformed,
    or as prompted text), then it plays the scripted oracle on the conversation without its memory calls."""

    def __init__(self, mode: str):
        super().__init__()
        self.mode, self.oracle, self.requests = mode, ScriptedOracle(), []

    def completion(self, model, messages, *args, **kwargs):
        meta = (kwargs.get("litellm_params") or {}).get("metadata") or {}
        if meta.get("role") == "user":
            return self.oracle.completion(model, messages, *args, **kwargs)
        tools = [t["function"]["name"] for t in (kwargs.get("optional_params") or {}).get("tools") or []]
        self.requests.append({"messages": json.loads(json.dumps(messages)), "tools": tools})
        if TOOL not in json.dumps(messages[1:]):  # not yet pulled
            args = "{not json" if self.mode == "malformed" else json.dumps({"query": "exchange items"})
            if self.mode == "prompted":
                return reply({"role": "assistant", "content": f'<tool_call>\n{{"name": "{TOOL}", "arguments": '
                                                             f'{args}}}\n</tool_call>'})
            return reply({"role": "assistant", "content": None, "tool_calls": [
                {"id": "m1", "type": "function", "function": {"name": TOOL, "arguments": args}}]})
        if self.mode == "prompted":
            return reply({"role": "assistant", "content": f"All set. {DONE_MARKER}"})
        return self.oracle.completion(model, without_memory_calls(messages), *args, **kwargs)


def reply(message):
    return ModelResponse(model="puller", choices=[{"message": message, "finish_reason": "stop"}],
                         usage={"prompt_tokens": 50, "completion_tokens": 5, "total_tokens": 55})


def without_memory_calls(messages):
    ids = {c["id"] for m in messages for c in m.get("tool_calls") or [] if c["function"]["name"] == TOOL}
    return [m for m in messages if m.get("tool_call_id") not in ids
            and not any(c["id"] in ids for c in m.get("tool_calls") or [])]


@pytest.fixture
def env_calls(monkeypatch):
    """Every tool call tau2's environment receives."""
    from tau2.environment.environment import Environment

    seen, original = [], Environment.get_response
    monkeypatch.setattr(Environment, "get_response", lambda self, call: (seen.append(call.name), original(self, call))[1])
    return seen


def run(runs_dir, mode, *overrides):
    install()
    agent = register_provider(PROVIDER, Puller(mode))
    try:
        cfg = compose("model=oracle", f"model.name={PROVIDER}/agent", "model.user_name=memdeliv-scripted/oracle",
                      "model.max_retries=0", "benchmark.task_ids=['5']", "progress=false", f"runs_dir={runs_dir}",
                      f"run_name={mode}", "concurrency=1", "strategy=on_demand", f"memory={SAMPLE_MEMORY}",
                      *overrides)
        run_job(cfg)
    finally:
        unregister_provider(PROVIDER)
    (record,) = read_records(runs_dir / mode)
    trajectory = json.loads((runs_dir / mode / record["trajectory"]).read_text())
    return agent, record, trajectory["simulations"][0]["messages"]


def test_a_native_recall_is_answered_and_never_reaches_tau2s_environment_or_evaluated_trajectory(runs_dir, env_calls):
    agent, record, messages = run(runs_dir, "native")
    assert TOOL in agent.requests[0]["tools"] and "get_order_details" in agent.requests[0]["tools"]
    answer = agent.requests[1]["messages"][-1]
    assert answer["role"] == "tool" and "Recalled guidelines" in answer["content"]
    assert record["success"] and record["reward"] == 1.0  # tau2 grades the oracle's actions as without memory
    assert record["memory_tool_calls"] == 1 and record["memory_tool_errors"] == 0
    ids = record["memory_tool_ids"][0]
    assert len(ids) == 3 and set(ids) <= {g.id for g in load_memory(SAMPLE_MEMORY)[0]}
    assert env_calls and TOOL not in env_calls
    evaluated = json.dumps([{k: m.get(k) for k in ("tool_calls", "content")} for m in messages])
    assert TOOL not in evaluated and "Recalled guidelines" not in evaluated
    kept = [c for m in messages for c in (m.get("raw_data") or {}).get("memory_calls") or []]
    assert [(c["tool"], c["ids"]) for c in kept] == [(TOOL, ids)]  # where the viewer shows it


def test_a_malformed_recall_gets_an_error_answer_is_counted_and_the_episode_goes_on(runs_dir, env_calls):
    agent, record, _ = run(runs_dir, "malformed")
    assert agent.requests[1]["messages"][-1]["content"].startswith(f"Error: {TOOL}: arguments are not JSON")
    assert record["success"] and record["error"] is None  # never infra, never an agent error
    assert (record["memory_tool_calls"], record["memory_tool_errors"]) == (1, 1) and TOOL not in env_calls


def test_the_prompted_format_calls_recall_guidelines_in_text(runs_dir, env_calls):
    agent, record, _ = run(runs_dir, "prompted", "model.tool_mode=prompted")
    system = agent.requests[0]["messages"][0]["content"]
    assert f'"name": "{TOOL}"' in system.split("</tools>")[0] and agent.requests[0]["tools"] == []
    answer = agent.requests[1]["messages"][-1]
    assert answer["role"] == "user" and answer["content"].startswith(f"[result of tool {TOOL}]\n<recalled_guidelines>")
    assert record["memory_tool_calls"] == 1 and record["memory_tool_errors"] == 0 and TOOL not in env_calls


def test_the_simulated_agent_pulls_by_its_planted_chance_and_reads_what_the_retriever_returned(artifact):
    world, prof = simulated_world.load_world(artifact), simulated_world.profile("strong")
    helps, tasks = next(iter(world.helps.items()))
    task = sorted(tasks)[0]
    seeds = range(40)
    pulled = [s for s in seeds if simulated_world.pulls(prof, task, s)]
    assert 0.6 < len(pulled) / len(seeds) <= 1.0 and simulated_world.profile("small").pull < prof.pull
    script = {"task_id": task, "gold_calls": [{"name": "get_order_details", "arguments": {}}], "final_message": "ok"}
    user = {"role": "user", "content": "I want to exchange my boots"}
    call = simulated.agent_turn([{"role": "system", "content": "S"}, user], script, prof, world, pulled[0],
                                can_pull=True)
    assert call["tool_calls"][0]["function"]["name"] == TOOL
    answer = {"role": "tool", "tool_call_id": call["tool_calls"][0]["id"], "content": f"- [{helps}] {world.texts[helps]}"}
    after = [{"role": "system", "content": "S"}, user, call, answer]
    assert simulated_world.read_prompt(after, world).delivered == (helps,)
    gold = simulated.agent_turn(after, script, prof, world, pulled[0], can_pull=True)
    assert gold["tool_calls"][0]["function"]["name"] == "get_order_details"  # its recall is not a gold call


def test_the_viewer_shows_a_memory_call_and_its_answer_at_their_own_step():
    from jinja2 import Environment, FileSystemLoader

    from analysis.viewer import trajectory

    call = {"id": "m1", "tool": TOOL, "arguments": {"query": "exchange"}, "answer": "- [r1] use the exchange tool",
            "ids": ["r1"], "error": None}
    doc = {"simulations": [{"messages": [
        {"role": "user", "content": "I want an exchange"},
        {"role": "assistant", "content": None, "tool_calls": [{"name": "get_order_details", "arguments": {}}],
         "usage": {}, "raw_data": {"memory_calls": [call]}}]}]}
    turns = trajectory._tau2(doc).turns
    assert [(t.role, t.step, t.memory) for t in turns] == [("user", None, False), ("assistant", 0, True),
                                                          ("tool", None, True), ("assistant", 1, False)]
    assert turns[1].tool_calls[0]["name"] == TOOL and turns[2].text == call["answer"]
    env = Environment(loader=FileSystemLoader("analysis/viewer/templates"), autoescape=True)
    env.filters["num"] = lambda value, digits=0: str(value)  # the app's number filter, not used by turn_box
    html = env.from_string('{% import "macros.html" as m %}{{ m.turn_box(t) }}').render(t=turns[1])
    assert "memtool" in html and "not seen by the benchmark" in html and f"→ {TOOL}(" in html


def test_on_the_simulated_world_on_demand_pulls_reads_what_it_was_given_and_costs_less_than_full(artifact, runs_dir,
                                                                                                  capsys):
    from harness.run import check_job, compose_job
    from tau2.data_model.simulation import Results

    tasks = ["5", "9", "12", "17", "18", "26"]
    common = ["model=simulated", f"model.world={artifact}", "benchmark=tau2_retail", "benchmark.trials=2",
              f"benchmark.task_ids=[{','.join(repr(t) for t in tasks)}]", f"memory={artifact}", f"runs_dir={runs_dir}",
              "progress=false", "run_name=sim"]
    for strategy in ("full", "on_demand"):
        cfg = compose_job([*common, f"strategy={strategy}"])
        check_job(cfg)
        run_job(cfg)
    rows = read_records(runs_dir / "sim")
    pulled = [r for r in rows if r["strategy"] == "on_demand" and r["memory_tool_calls"]]
    assert pulled and all(r["memory_tool_errors"] == 0 for r in pulled)
    w = simulated_world.load_world(artifact)
    for r in pulled:  # the draw read exactly the guidelines the retriever returned
        sim = Results.load(runs_dir / "sim" / r["trajectory"]).simulations[0]
        tag = next(simulated.parse_tag(m.content) for m in sim.messages if m.role == "assistant"
                   and simulated.parse_tag(m.content or ""))
        assert tag["relevant"] == len(w.relevant_ids(r["task_id"], r["memory_tool_ids"][0]))
    mean = {s: sum(r["memory_tokens"] for r in rows if r["strategy"] == s) / (2 * len(tasks))
            for s in ("full", "on_demand")}
    assert 0 < mean["on_demand"] < mean["full"] / 5

    # make table prints the pull rate the rows hold: the share of episodes with at least one memory call
    from analysis.table import main as table

    on_demand = [r for r in rows if r["strategy"] == "on_demand"]
    share = sum(1 for r in on_demand if r["memory_tool_calls"]) / len(on_demand)
    returned = sum(len(ids) for r in on_demand for ids in r["memory_tool_ids"]) / len(on_demand)
    assert 0 < share < 1  # planted 0.8: some episodes pulled, some did not
    table([str(runs_dir / "sim")])
    printed = capsys.readouterr().out
    line = next(x for x in printed.splitlines() if x.strip().startswith("on_demand: success"))
    assert f"pull rate {100 * share:.1f}% ({len(pulled)} of {len(on_demand)} episodes)" in line
    assert f"{returned:.1f} guidelines returned per episode" in line and "never pulled" not in printed
    assert not any(x.strip().startswith("full:") for x in printed.splitlines())  # full offers no memory tool


def test_a_model_that_never_pulls_reads_as_never_pulled_in_the_table_the_viewer_and_the_controls(artifact, runs_dir,
                                                                                                 capsys):
    from analysis import load_records
    from analysis.table import main as table
    from analysis.viewer.episodes import EpisodeIndex
    from analysis.views import controls

    install()
    for strategy in ("full", "on_demand", "protocol_only"):
        run_job(compose("model=oracle", "benchmark.task_ids=['5','9']", "progress=false", f"runs_dir={runs_dir}",
                        "run_name=ignored", f"strategy={strategy}", f"memory={artifact}"))
    rows = read_records(runs_dir / "ignored")
    assert all(r["memory_tool_calls"] == 0 for r in rows if r["strategy"] == "on_demand")  # offered, never called
    table([str(runs_dir / "ignored")])
    printed = capsys.readouterr().out
    line = next(x for x in printed.splitlines() if x.strip().startswith("on_demand: success"))
    assert "on_demand: success 100.0%; pull rate 0.0% (0 of 2 episodes called a memory tool)" in line
    assert "the memory was never pulled" in printed
    assert all(len(x) <= 160 for x in printed.splitlines())
    page = EpisodeIndex([runs_dir / "ignored"]).page({})
    assert len(page.pulls) == 1 and "the memory was never pulled" in page.pulls[0]
    said = controls.terminal(load_records([runs_dir / "ignored"]))
    assert "on_demand: pull rate 0.0% (0 of 2 episodes)" in said and "the memory was never pulled" in said
