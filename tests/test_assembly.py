"""Request assembly (harness/assembly/) end to end: budget notes, priority_drop, rebuild, placement.

The agent model is RecordingAgent, a SCRIPTED LiteLLM provider (not a language model) that keeps every
request it received, so each test checks the prompt the model actually got.
"""

from __future__ import annotations

import json
import threading

import litellm
import pytest
from litellm import CustomLLM, ModelResponse

from conftest import SAMPLE_MEMORY, compose, read_records
from harness import assembly
from harness.runner import run_job
from harness.serving.providers import register_provider, unregister_provider
from harness.scripted.oracle import DONE_MARKER, ScriptedOracle, install
from memory_kit.memory_file import load_memory

PROVIDER = "memdeliv-test-asm"
ANSWER = f"REBUILT ANSWER FROM A CLEAN REQUEST {DONE_MARKER}"


class RecordingAgent(CustomLLM):
    """FAKE agent model for tests. `oracle`: replays gold calls like the scripted oracle. `long`: `rounds`
    rounds of two read-only tool calls then a question to the user, then a final message. A request
    without tools (answer_mode=rebuild's extra call) is answered with ANSWER. Every request is kept."""

    def __init__(self, rounds: int = 6):
        super().__init__()
        self.requests: list[dict] = []
        self.rounds = rounds
        self.acts = 0
        self.lock = threading.Lock()
        self.oracle = ScriptedOracle()

    def completion(self, model, messages, *args, **kwargs):
        tools = (kwargs.get("optional_params") or {}).get("tools")
        with self.lock:
            self.requests.append({"messages": json.loads(json.dumps(messages)), "tools": tools})
        if not tools:
            message = {"role": "assistant", "content": ANSWER}
        elif model == "oracle":
            return self.oracle.completion(model, messages, *args, **kwargs)
        else:
            message = self._long_turn()
        prompt = litellm.token_counter(model="gpt-4o", messages=[{"role": "user", "content": json.dumps(messages)}])
        return ModelResponse(model=model, choices=[{"message": message, "finish_reason": "stop"}],
                             usage={"prompt_tokens": prompt, "completion_tokens": 5, "total_tokens": prompt + 5})

    def _long_turn(self) -> dict:
        with self.lock:
            n, self.acts = self.acts, self.acts + 1
        round_, pos = divmod(n, 3)
        if round_ >= self.rounds:
            return {"role": "assistant", "content": f"That is everything. {DONE_MARKER}"}
        if pos == 2:
            return {"role": "assistant", "content": f"Round {round_} done. Anything else?"}
        return {"role": "assistant", "content": None, "tool_calls": [{
            "id": f"call_{n}", "type": "function",
            "function": {"name": "list_all_product_types", "arguments": "{}"}}]}


@pytest.fixture
def agent():
    install()
    handler = register_provider(PROVIDER, RecordingAgent())
    yield handler
    unregister_provider(PROVIDER)


def run(runs_dir, name, *overrides, script="oracle"):
    cfg = compose("model=oracle", f"model.name={PROVIDER}/{script}", "model.user_name=memdeliv-scripted/oracle",
                  "model.max_retries=0", "benchmark.task_ids=['5']", "progress=false", f"runs_dir={runs_dir}",
                  f"run_name={name}", "concurrency=1", *overrides)
    summary = run_job(cfg)
    return summary, read_records(runs_dir / name)


def acting(agent):
    return [r for r in agent.requests if r["tools"]]


def text_of(messages):
    return "\n".join(str(m.get("content") or "") for m in messages)


def test_budget_drops_lowest_support_and_the_note_reaches_the_model(runs_dir, agent):
    guidelines, _ = load_memory(SAMPLE_MEMORY)
    _, (record,) = run(runs_dir, "budget", "strategy=full", f"memory={SAMPLE_MEMORY}",
                       "strategy.options.budget_tokens=150")
    system = acting(agent)[0]["messages"][0]["content"]
    delivered, dropped = record["delivered"][0], record["dropped"][0]
    assert delivered and dropped and set(delivered).isdisjoint(dropped)
    support = {g.id: g.support for g in guidelines}
    assert min(support[i] for i in delivered) >= max(support[i] for i in dropped)  # lowest support went first
    assert f"({len(dropped)} lower-priority lessons omitted to fit the budget.)" in system
    assert all(f"[{i}]" in system for i in delivered) and not any(f"[{i}]" in system for i in dropped)
    assert record["step_usage"][0]["dropped_ids"] == sorted(dropped) or set(record["step_usage"][0]["dropped_ids"]) \
        == set(dropped)


def test_first_user_message_placement_puts_the_block_in_the_first_user_message(runs_dir, agent):
    _, (record,) = run(runs_dir, "fum", "strategy=full", f"memory={SAMPLE_MEMORY}",
                       "benchmark.placement=first_user_message")
    assert record["placement"] == "first_user_message" and record["job"].endswith("@placement=first_user_message")
    for request in acting(agent):
        messages = request["messages"]
        first_user = next(m for m in messages if m["role"] == "user")
        assert first_user["content"].startswith("<learned_guidelines>")
        assert "<learned_guidelines>" not in messages[0]["content"]
        assert sum("<learned_guidelines>" in str(m.get("content")) for m in messages) == 1


def test_priority_drop_keeps_a_long_episode_under_the_window_with_a_code_made_summary(runs_dir, agent):
    _, (first,) = run(runs_dir, "measure", "strategy=none", script="long")  # the unconstrained episode
    sizes = [assembly.request_tokens(f"{PROVIDER}/long", r["messages"], r["tools"]) for r in acting(agent)]
    window = int((sizes[0] + (sizes[-1] - sizes[0]) // 3) / assembly.SAFETY)  # overflows a third of the way
    assert max(sizes) > window  # without a policy the episode would not fit
    agent.requests.clear()
    agent.acts = 0
    calls_before = len(agent.requests)
    _, (kept,) = run(runs_dir, "drop", "strategy=none", "benchmark.context_policy=priority_drop",
                     f"model.context_window={window}", script="long")
    requests = acting(agent)
    assert kept["error"] is None and kept["termination"] == "user_stop" and kept["steps"] == first["steps"]
    for r in requests:
        assert assembly.request_tokens(f"{PROVIDER}/long", r["messages"], r["tools"]) <= window
    summarised = [r for r in requests if "summarised by the harness" in text_of(r["messages"])]
    assert summarised and sum(s["summarised_turns"] > 0 for s in kept["step_usage"]) == len(summarised)
    note = next(m["content"] for m in summarised[-1]["messages"] if "summarised by the harness" in str(m["content"]))
    assert "You called list_all_product_types({})" in note and "The user said:" in note  # made by code
    assert len(agent.requests) - calls_before == kept["steps"]  # no extra (summariser) model call
    # the same episode with the default policy ends as a context overflow at the same window
    agent.acts = 0
    _, (failed,) = run(runs_dir, "fail", "strategy=none", f"model.context_window={window}", script="long")
    assert "context_overflow" in f"{failed['error']} {failed['error_detail']}" and not failed["success"]


def test_rebuild_sends_a_request_without_tool_messages_and_ledgers_it(runs_dir, agent):
    _, (record,) = run(runs_dir, "rebuild", "strategy=full", f"memory={SAMPLE_MEMORY}",
                       "benchmark.answer_mode=rebuild")
    clean = [r for r in agent.requests if not r["tools"]]
    assert len(clean) == 1 == record["answer_calls"]
    messages = clean[0]["messages"]
    assert [m["role"] for m in messages] == ["system", "user"]
    assert not any(m.get("tool_calls") or m["role"] == "tool" for m in messages)
    assert "<learned_guidelines>" in messages[0]["content"]  # the same system message: policy + memory
    assert "returned (raw)" in messages[1]["content"] and "The user's latest message" in messages[1]["content"]
    phases = [s["phase"] for s in record["step_usage"]]
    assert phases.count("answer") == 1 and record["steps"] == len(phases)
    assert record["prompt_tokens"] == sum(s["prompt_tokens"] for s in record["step_usage"])  # tokens include it
    trajectory = json.loads((runs_dir / "rebuild" / record["trajectory"]).read_text())
    final = [m for m in trajectory["simulations"][0]["messages"] if m["role"] == "assistant"][-1]
    assert final["content"] == ANSWER and final["raw_data"]["working_reply"]


def test_cut_observation_says_the_rest_must_not_be_guessed():
    out = assembly.cut_observation("x" * 500, 100)
    assert out.startswith("x" * 100 + "\n[truncated]") and "100 of 500" in out and "Do not guess" in out
    assert assembly.cut_observation("short", 100) == "short" and assembly.cut_observation("y" * 9, None) == "y" * 9
    history = [{"role": "tool", "content": "z" * 50, "tool_call_id": "a"}, {"role": "user", "content": "u" * 50}]
    cut = assembly.cut_tool_results(history, 10)
    assert "Do not guess" in cut[0]["content"] and cut[1]["content"] == "u" * 50


def test_trailing_block_is_a_user_message_for_claude_and_the_prefix_is_marked():
    history = [{"role": "user", "content": "hi"}]
    gpt = assembly.place("policy", history, "MEM", "end_of_conversation", "openai/gpt-4.1")
    claude = assembly.place("policy", history, "MEM", "end_of_conversation", "anthropic/claude-sonnet-4-5")
    assert gpt[-1] == {"role": "system", "content": "MEM"} and claude[-1] == {"role": "user", "content": "MEM"}
    marked = assembly.cache_marks(claude, "end_of_conversation", "anthropic/claude-sonnet-4-5")
    assert marked[0]["cache_control"] == {"type": "ephemeral"} and "cache_control" not in marked[-1]
    fum = assembly.place("policy", history, "MEM", "first_user_message", "claude-sonnet-4-5")
    assert assembly.cache_marks(fum, "first_user_message", "claude-sonnet-4-5")[1]["cache_control"]
    assert assembly.cache_marks(gpt, "after_policy", "openai/gpt-4.1") == gpt  # OpenAI caches on its own


def test_priority_drop_order_on_a_hand_made_request():
    """Oldest turns first (summarised by code), then memory by priority, never system or latest user message."""
    from strategies import Guideline, render_guidelines
    from memory_kit.budget import fit_budget

    def words(messages):
        return sum(len(str(m.get("content") or "").split()) for m in messages)

    items = [Guideline(id=f"g{i}", text=f"lesson {i} " + "x " * 20, support=10 - i) for i in range(5)]
    memory = fit_budget(items, [g.support for g in items], lambda kept, note: render_guidelines(kept, note=note),
                        lambda t: len(t.split()), None)
    history = [{"role": "assistant", "content": "Hi! How can I help?"}, {"role": "user", "content": "FIRST " * 30}]
    for i in range(4):
        history += [{"role": "assistant", "content": None, "tool_calls": [{"id": f"c{i}", "type": "function",
                     "function": {"name": "lookup", "arguments": json.dumps({"n": i})}}]},
                    {"role": "tool", "tool_call_id": f"c{i}", "content": f"result {i} " + "y " * 400},
                    {"role": "assistant", "content": f"answer {i}"}, {"role": "user", "content": f"next {i}"}]
    history[-1]["content"] = "LATEST question"
    whole = assembly.assemble("POLICY", history, memory, assembly.chat_layout("after_policy", "gpt-4o"),
                              policy="priority_drop", limit=10 ** 6, measure=words)
    assert whole.summarised_turns == 0 and whole.delivery is memory
    size = words(whole.messages)
    turns = assembly.assemble("POLICY", history, memory, assembly.chat_layout("after_policy", "gpt-4o"),
                              policy="priority_drop", limit=size - 100, measure=words)
    assert turns.summarised_turns > 0 and turns.delivery.ids == memory.ids  # turns go before memory
    text = text_of(turns.messages)
    assert "summarised by the harness" in text and "You called lookup" in text and "LATEST question" in text
    assert turns.messages[2]["content"].startswith("FIRST")  # the first user message stays whole
    limit, tight = size, turns
    while not tight.context_dropped:  # the largest limit at which memory has to give way
        limit -= 10
        tight = assembly.assemble("POLICY", history, memory, assembly.chat_layout("after_policy", "gpt-4o"),
                                  policy="priority_drop", limit=limit, measure=words)
    assert tight.summarised_turns == 11  # by then every turn before the latest user message was folded
    assert tight.context_dropped and tight.context_dropped == tuple(memory.ids[-len(tight.context_dropped):])
    assert "lower-priority lessons omitted" in tight.messages[0]["content"]
    assert tight.messages[0]["content"].startswith("POLICY") and tight.messages[-1]["content"] == "LATEST question"
    with pytest.raises(assembly.ContextOverflow):
        assembly.assemble("POLICY", history, memory, assembly.chat_layout("after_policy", "gpt-4o"),
                          policy="priority_drop", limit=20, measure=words)
    plain = assembly.Delivery(tuple(items), "PLUGIN BLOCK " + "z " * 200)  # a plugin without refit
    gone = assembly.assemble("POLICY", history, plain, assembly.chat_layout("after_policy", "gpt-4o"),
                             policy="priority_drop", limit=limit, measure=words)
    assert "PLUGIN BLOCK" not in text_of(gone.messages) and "was omitted to fit the context window" in text_of(
        gone.messages) and set(gone.context_dropped) == {g.id for g in items}


def test_priority_drop_in_a_single_turn_keeps_the_latest_tool_round():
    def words(messages):
        return sum(len(str(m.get("content") or "").split()) for m in messages)

    history = [{"role": "assistant", "content": "Hi!"}, {"role": "user", "content": "ONLY request"}]
    for i in range(6):
        history += [{"role": "assistant", "content": None, "tool_calls": [{"id": f"c{i}", "type": "function",
                     "function": {"name": "lookup", "arguments": "{}"}}]},
                    {"role": "tool", "tool_call_id": f"c{i}", "content": f"RESULT{i} " + "y " * 300}]
    size = words(assembly.place("POLICY", history, "", "after_policy", "gpt-4o"))
    out = assembly.assemble("POLICY", history, assembly.Delivery(), assembly.chat_layout("after_policy", "gpt-4o"),
                            policy="priority_drop", limit=size // 2, measure=words)
    assert 0 < out.summarised_turns < 6 and words(out.messages) <= size // 2
    assert out.messages[-1]["content"].startswith("RESULT5") and out.messages[-1]["content"] == history[-1]["content"]
    assert out.messages[-2]["tool_calls"][0]["id"] == "c5"  # the call stays paired with its result
    assert out.messages[2]["content"] == "ONLY request" and "RESULT0" in out.messages[3]["content"]  # in the summary


def test_priority_drop_last_trims_the_summary_itself_after_memory():
    def words(messages):
        return sum(len(str(m.get("content") or "").split()) for m in messages)

    history = [{"role": "assistant", "content": "Hi!"}, {"role": "user", "content": "ONLY request"}]
    for i in range(40):
        history += [{"role": "assistant", "content": None, "tool_calls": [{"id": f"c{i}", "type": "function",
                     "function": {"name": "lookup", "arguments": "{}"}}]},
                    {"role": "tool", "tool_call_id": f"c{i}", "content": f"RESULT{i} " + "y " * 10}]
    memory = assembly.Delivery((), "MEMORY " * 50)  # no refit: dropped whole, with a note
    folded_all = assembly.assemble("POLICY", history, memory, assembly.chat_layout("after_policy", "gpt-4o"),
                                   policy="priority_drop", limit=10 ** 6, measure=words)
    size = words(folded_all.messages)
    out = assembly.assemble("POLICY", history, memory, assembly.chat_layout("after_policy", "gpt-4o"),
                            policy="priority_drop", limit=size // 4, measure=words)
    text = text_of(out.messages)
    assert words(out.messages) <= size // 4 and "MEMORY" not in text  # memory went before the summary shrank
    assert "lines of this summary were dropped to fit" in text and "RESULT38" in text and "RESULT0 " not in text
    assert out.messages[-1]["content"].startswith("RESULT39")  # the newest round is still whole
