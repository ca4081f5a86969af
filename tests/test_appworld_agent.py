"""The AppWorld ReAct code agent on its own: per-step delivery, placement, truncation, step limit, and request
assembly (context_policy=priority_drop, answer_mode=rebuild; harness/assembly/).

The engine is replaced by a plain function and the model by FakeCodeModel (a scripted stand-in named
so); the real engine runs in test_appworld_engine.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from harness import assembly
from harness.assembly.observations import TRUNCATED
from harness.benchmarks.appworld.agent import ReActCodeAgent, answer_only, extract_code, truncate
from harness.ledger import Ledger, MemoryTokenCounter
from harness.serving.model_client import Completion, Usage
from strategies import Delivery, Guideline, StrategyBase, TaskView

SUPERVISOR = {"first_name": "Toy", "last_name": "Supervisor", "email": "toy@example.com", "phone_number": "555"}


@dataclass
class FakeCodeModel:
    """Scripted stand-in for a model: returns the given replies in order and keeps every prompt it saw."""

    replies: list[str]
    model: str = "gpt-4o"
    kwargs: dict = field(default_factory=dict)
    prompts: list = field(default_factory=list)

    def complete(self, messages, tools=None):
        self.prompts.append(messages)
        reply = self.replies[min(len(self.prompts) - 1, len(self.replies) - 1)]
        return Completion(content=reply, tool_calls=(),
                          usage=Usage(prompt_tokens=100, completion_tokens=10, cached_tokens=None, cost_usd=None,
                                      latency_s=0.01))


class StepTaggedMemory(StrategyBase):
    """Delivers one guideline whose text names the step, so each step's prompt shows a fresh delivery."""

    def __init__(self):
        super().__init__(name="step_tagged")
        self.seen: list[tuple[str, int, int]] = []

    def deliver(self, task, step):
        self.seen.append((task.task_id, step.index, len(step.messages)))
        g = Guideline(id=f"g{step.index}", text=f"memory for step {step.index}")
        return Delivery(guidelines=(g,), text=f"<memory>step {step.index}</memory>")


def make_agent(replies, placement="first_user_message", max_steps=40, max_observation_chars=20000, **assembly_opts):
    model, strategy, ledger = FakeCodeModel(replies), StepTaggedMemory(), Ledger()
    view = TaskView(benchmark="appworld", task_id="abc1234_1", description="What is 2 + 3?")
    opts = assembly.AssemblyOptions(placement=placement, max_observation_chars=max_observation_chars, **assembly_opts)
    agent = ReActCodeAgent(model, strategy, view, ledger, MemoryTokenCounter("gpt-4o"), max_steps=max_steps,
                           assembly_options=opts)
    return agent, model, strategy, ledger


def engine_completing_on(step_done: int):
    calls = []

    def execute(code):
        calls.append(code)
        return f"ran {len(calls)}", len(calls) == step_done

    return execute, calls


def test_extract_code_joins_blocks_and_rejects_prose():
    text = "Plan.\n```python\nx = 1\n```\nthen\n```py\nprint(x)\n```"
    assert extract_code(text) == "x = 1\n\nprint(x)"
    assert extract_code("no code here, just `inline`") is None


def test_truncate_marks_the_cut():
    out = truncate("a" * 50, 20)
    assert out.startswith("a" * 20 + "\n") and TRUNCATED in out and "20 of 50" in out
    assert truncate("short", 20) == "short"


def test_memory_delivered_every_step_in_first_user_message():
    agent, model, strategy, ledger = make_agent(["```python\nprint(1)\n```"])
    execute, calls = engine_completing_on(3)
    result = agent.run(SUPERVISOR, "What is 2 + 3?", execute)
    assert result.completed and len(result.steps) == 3 and len(calls) == 3
    assert [s[1] for s in strategy.seen] == [0, 1, 2]  # asked at every step
    assert [s[2] for s in strategy.seen] == [1, 3, 5]  # and shown the conversation so far
    for i, prompt in enumerate(model.prompts):
        first_user = prompt[1]["content"]
        assert f"<memory>step {i}</memory>" in first_user and first_user.endswith("Task: What is 2 + 3?")
        assert "memory" not in prompt[0]["content"]
    assert [list(s.delivered_ids) for s in ledger.agent_steps] == [["g0"], ["g1"], ["g2"]]
    assert all(s.memory_tokens > 0 for s in ledger.agent_steps)
    assert model.prompts[2][-1] == {"role": "user", "content": "Output:\nran 2"}


@pytest.mark.parametrize("placement", ["after_policy", "end_of_conversation"])
def test_other_placements(placement):
    agent, model, _, _ = make_agent(["```python\nprint(1)\n```"], placement=placement)
    agent.run(SUPERVISOR, "q", engine_completing_on(2)[0])
    for i, prompt in enumerate(model.prompts):
        mark = f"<memory>step {i}</memory>"
        assert mark not in prompt[1]["content"]
        where = prompt[0]["content"] if placement == "after_policy" else prompt[-1]["content"]
        assert where.endswith(mark)


def test_max_steps_truncation_and_missing_code():
    agent, model, _, ledger = make_agent(["thinking, no code", "```python\nprint('x' * 999)\n```"], max_steps=3,
                                         max_observation_chars=30)
    result = agent.run(SUPERVISOR, "q", lambda code: ("x" * 999, False))
    assert not result.completed and len(result.steps) == 3 == len(ledger.agent_steps)
    assert result.steps[0].code is None and "No ```python code block" in result.steps[0].observation
    assert TRUNCATED in result.steps[1].observation and len(result.steps[1].observation) < 200
    assert TRUNCATED in model.prompts[2][-1]["content"]  # the model sees the marker


def test_unknown_placement_is_rejected():
    with pytest.raises(ValueError, match="placement"):
        make_agent(["x"], placement="nowhere")


# --- request assembly ------------------------------------------------------------------------------------
LONG = "```python\nprint(rows)\n```"


def tokens(prompt) -> int:
    return assembly.request_tokens("gpt-4o", prompt)


@pytest.mark.parametrize("policy", ["fail", "priority_drop"])
def test_priority_drop_keeps_a_long_episode_under_the_limit_with_a_code_made_summary(policy):
    limit = 4000  # the first request is ~1,000 tokens; each round adds ~600
    agent, model, _, ledger = make_agent([LONG], max_steps=12, context_policy=policy, limit=limit)
    outputs = iter(f"row {i}: " + "lorem ipsum dolor " * 150 for i in range(100))
    result = agent.run(SUPERVISOR, "What is 2 + 3?", lambda code: (next(outputs), False))
    assert len(result.steps) == 12
    sizes = [tokens(p) for p in model.prompts]
    if policy == "fail":  # the same episode, sent as it is: this is what priority_drop must prevent
        assert max(sizes) > limit and not any(s.summarised_turns for s in ledger.agent_steps)
        return
    assert max(sizes) <= limit and sizes[0] < 1500
    last = model.prompts[-1]
    folded = ledger.agent_steps[-1].summarised_turns
    assert folded >= 5 and f"[{folded} earlier turns summarised by the harness" in last[2]["content"]
    summary = last[2]["content"]
    assert summary.count("- You ran: print(rows)") == folded and summary.count("  - it printed: row ") == folded
    assert "row 0: lorem" in summary and len(summary) < folded * 600  # results cut to their first characters
    assert last[1]["content"].endswith("Task: What is 2 + 3?")  # the task is never dropped
    assert last[-1] == {"role": "user", "content": "Output:\n" + result.steps[-2].observation}  # newest round whole
    assert all("<memory>step" in p[1]["content"] for p in model.prompts)  # memory outlives the old rounds
    assert sum(s.summarised_turns > 0 for s in ledger.agent_steps) >= 5


class LongMemory(StrategyBase):
    """A plain Delivery (no refit) of ~100 tokens: the context policy can only drop it whole."""

    def __init__(self):
        super().__init__(name="long_memory")

    def deliver(self, task, step):
        return Delivery(guidelines=(Guideline(id="g0", text="lesson"),), text="<memory>" + " lesson" * 100)


def test_priority_drop_then_drops_memory_and_says_so():
    agent, model, _, ledger = make_agent([LONG], max_steps=2, context_policy="priority_drop", limit=1)
    with pytest.raises(assembly.ContextOverflow, match="not fit"):  # instructions and task alone do not fit
        agent.run(SUPERVISOR, "q", lambda code: ("out", False))
    assert model.prompts == []  # nothing sent
    base = tokens(_first_request())
    agent, model, _, ledger = make_agent([LONG], max_steps=1, context_policy="priority_drop", limit=base + 50)
    agent.step.strategy = LongMemory()
    agent.run(SUPERVISOR, "What is 2 + 3?", lambda code: ("out", False))
    (prompt,) = model.prompts
    assert "<memory>" not in prompt[1]["content"] and "memory block, 1 items, was omitted" in prompt[1]["content"]
    assert list(ledger.agent_steps[0].context_dropped_ids) == ["g0"] and not ledger.agent_steps[0].delivered_ids
    assert tokens(prompt) <= base + 50


def _first_request():
    """The first request without memory: what the instructions and the task alone weigh."""
    from harness.benchmarks.appworld.agent import build_messages
    from strategies import EMPTY

    return build_messages(SUPERVISOR, "What is 2 + 3?", EMPTY, [])


def test_answer_only_recognises_a_step_that_only_hands_in_an_answer():
    assert answer_only("apis.supervisor.complete_task(answer=7)")
    assert answer_only("apis.supervisor.complete_task('Paris')")
    assert not answer_only("apis.supervisor.complete_task()")  # a task without a question: nothing to rebuild
    assert not answer_only("apis.supervisor.complete_task(answer=None)")
    assert not answer_only("x = 1\napis.supervisor.complete_task(answer=x)")  # the step does more than answer
    assert not answer_only("apis.supervisor.complete_task(answer=")
    assert not answer_only(None)


REBUILT = "```python\napis.supervisor.complete_task(answer=5)\n```"


def test_rebuild_regenerates_the_answer_from_a_clean_request_and_ledgers_it():
    replies = ["```python\nprint(2 + 3)\n```", "```python\napis.supervisor.complete_task(answer=4)\n```", REBUILT]
    agent, model, _, ledger = make_agent(replies, answer_mode="rebuild")
    ran = []
    result = agent.run(SUPERVISOR, "What is 2 + 3?", lambda code: (ran.append(code) or "5", "complete" in code))
    assert ran == ["print(2 + 3)", "apis.supervisor.complete_task(answer=5)"]  # the rebuilt answer ran
    assert result.completed and len(result.steps) == 2
    clean = model.prompts[2]
    assert [m["role"] for m in clean] == ["system", "user"]  # no chat of code and outputs
    body = clean[1]["content"]
    assert "print(2 + 3)" in body and "It printed:\n5" in body and "Task: What is 2 + 3?" in body
    assert "<memory>step 1</memory>" in body and "worked example" not in body and "answer=4" not in body
    assert [s.phase for s in ledger.agent_steps] == ["act", "act", "answer"]
    assert list(ledger.agent_steps[2].delivered_ids) == ["g1"] and ledger.record_fields()["answer_calls"] == 1
    assert result.steps[1].working_reply == replies[1] and result.steps[1].reply == REBUILT


def test_rebuild_that_does_not_answer_leaves_the_working_step():
    replies = ["```python\nprint(2 + 3)\n```", "```python\napis.supervisor.complete_task(answer=4)\n```",
               "The answer is 5."]
    agent, model, _, ledger = make_agent(replies, answer_mode="rebuild")
    ran = []
    result = agent.run(SUPERVISOR, "q", lambda code: (ran.append(code) or "5", "complete" in code))
    assert ran[-1] == "apis.supervisor.complete_task(answer=4)"
    assert result.steps[1].rebuild_discarded == "The answer is 5." and result.steps[1].working_reply is None
    assert [s.phase for s in ledger.agent_steps] == ["act", "act", "answer"]  # the call still cost tokens


def test_rebuild_only_after_code_ran_and_only_for_answers():
    agent, model, _, ledger = make_agent(["```python\napis.supervisor.complete_task(answer=4)\n```"],
                                         answer_mode="rebuild")
    agent.run(SUPERVISOR, "q", lambda code: ("done", True))  # answered at once: nothing to rebuild from
    assert len(model.prompts) == 1 and [s.phase for s in ledger.agent_steps] == ["act"]
    agent, model, _, ledger = make_agent(["```python\nprint(1)\n```", "```python\napis.supervisor.complete_task()\n```"],
                                         answer_mode="rebuild")
    agent.run(SUPERVISOR, "q", lambda code: ("1", "complete" in code))
    assert len(model.prompts) == 2 and "answer" not in [s.phase for s in ledger.agent_steps]


def test_rebuild_under_priority_drop_leaves_out_the_earliest_outputs_and_says_so():
    limit = 2000  # the clean request with all four outputs is ~2,340 tokens
    replies = [LONG] * 4 + ["```python\napis.supervisor.complete_task(answer=4)\n```", REBUILT]
    agent, model, _, ledger = make_agent(replies, answer_mode="rebuild", context_policy="priority_drop", limit=limit)
    outputs = iter([f"row {i}: " + "lorem ipsum dolor " * 150 for i in range(4)] + ["done"])
    agent.run(SUPERVISOR, "What is 2 + 3?", lambda code: (next(outputs), "complete" in code))
    clean = model.prompts[5]
    assert [m["role"] for m in clean] == ["system", "user"] and tokens(clean) <= limit
    body = clean[1]["content"]
    omitted = int(body.split("[the outputs of the ")[1].split(" ")[0])
    assert 1 <= omitted < 4 and "not shown: do not guess them" in body
    assert f"row {omitted - 1}:" not in body and f"row {omitted}:" in body and "row 3:" in body  # oldest gone first
    assert [s.phase for s in ledger.agent_steps][-1] == "answer"


def test_an_on_demand_recall_in_code_is_answered_by_the_step_and_never_run_by_the_engine():
    from ace_fakes import FakeBagOfWordsEmbedder
    from strategies.on_demand import OnDemand
    from strategies.on_demand.strategy import NOTICE

    lesson = Guideline("r1", "pay with the gift card first", source_task_text="buy a song")
    strategy, ledger = OnDemand(options={}, guidelines=(lesson,), embedder=FakeBagOfWordsEmbedder()), Ledger()
    model = FakeCodeModel(['```python\nprint(recall_guidelines("buy a song"))\n```', "```python\nprint(1)\n```"])
    view = TaskView(benchmark="appworld", task_id="abc1234_1", description="Buy a song.")
    agent = ReActCodeAgent(model, strategy, view, ledger, MemoryTokenCounter("gpt-4o"),
                           assembly_options=assembly.AssemblyOptions(placement="first_user_message"))
    execute, calls = engine_completing_on(1)
    result = agent.run(SUPERVISOR, "Buy a song.", execute)
    assert NOTICE in model.prompts[0][1]["content"] and calls == ["print(1)"]  # the engine never saw the recall
    assert result.steps[0].memory and "[r1] pay with the gift card first" in result.steps[0].observation
    assert model.prompts[1][-1]["content"].startswith("Output:\n<recalled_guidelines>")
    assert len(ledger.agent_steps) == len(result.steps) == 2 and ledger.memory_tool_fields()["memory_tool_ids"] == [
        ["r1"]]
