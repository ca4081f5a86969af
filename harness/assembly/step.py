"""One agent step, the same for every agent format: deliver -> assemble -> (cache marks) -> complete -> ledger,
and, when the format's answer_mode=rebuild applies, one more ledgered call from a clean request.

An agent (τ²'s tool-calling and ReAct agents, AppWorld's code agent) builds one `AgentStep` per episode and
keeps only what is its own: the conversation it shows (`history`), its Layout, how a completion is sent
(`send`: tools offered or not, prompted tool text) and what it does with the reply. README.md beside this file
walks through adding an agent format.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Optional

from harness.assembly import memory_calls
from harness.assembly.layout import Layout
from harness.assembly.options import AssemblyOptions
from harness.assembly.providers import cache_marks, request_tokens
from harness.assembly.request import Assembled, assemble
from harness.errors import call_strategy
from harness.serving.prompted_tools import add_tools
from strategies import EMPTY, Delivery, MemoryTool, StepView, Strategy, TaskView

if TYPE_CHECKING:
    from harness.ledger import Ledger, MemoryTokenCounter
    from harness.serving.model_client import Completion, ModelClient

Messages = list[dict[str, Any]]
Send = Callable[[Messages, bool], "Completion"]  # (request with cache marks, offer the tools?) -> completion


@dataclass(frozen=True)
class StepRequest:
    """One step's request: what was assembled, and what the strategy delivered before the context policy."""

    assembled: Assembled
    delivered: Delivery

    @property
    def messages(self) -> Messages:
        return self.assembled.messages


class AgentStep:
    """The episode's fixed parts of a step: model client, strategy and task view, ledger, memory counter and
    the job's AssemblyOptions. `measure` counts a request as sent (default: the messages alone); `send` calls
    the model (default: `client.complete(messages)`, no tools)."""

    def __init__(self, client: ModelClient, strategy: Optional[Strategy], task_view: Optional[TaskView],
                 ledger: Ledger, counter: MemoryTokenCounter, options: AssemblyOptions, *,
                 measure: Optional[Callable[[Messages], int]] = None, send: Optional[Send] = None,
                 tool_format: str = "native"):
        self.client, self.strategy, self.task_view = client, strategy, task_view
        self.ledger, self.counter, self.options = ledger, counter, options
        self.measure = measure or (lambda messages: request_tokens(client.model, messages))
        self.send = send or (lambda messages, tools: client.complete(messages))
        if tool_format not in memory_calls.TOOL_FORMATS:
            raise ValueError(f"tool_format {tool_format!r}; valid: {', '.join(memory_calls.TOOL_FORMATS)}")
        self.tool_format = tool_format  # how the model calls tools, memory tools included (memory_calls.py)
        # memory tools (docs/memory-tools.md): offered at the current call, every name offered this episode, the
        # answers given so far (counted as memory tokens at every call that still carries them), this turn's
        # exchanges as chat messages and as records (the agent keeps them in its history and trajectory)
        self.offered: tuple[MemoryTool, ...] = ()
        self.known: set[str] = set()
        self.answers: set[str] = set()
        self.exchange_messages: Messages = []
        self.exchanges: list[memory_calls.MemoryExchange] = []

    @property
    def memory_schemas(self) -> list[dict[str, Any]]:
        """The memory tools offered at the current call, as OpenAI function schemas (beside the benchmark's)."""
        return [t.schema() for t in self.offered]

    def deliver(self, index: int, history: Messages) -> Delivery:
        """The strategy's memory for step `index`, seeing the memory-free conversation."""
        if not self.strategy:
            return EMPTY
        view = StepView(index=index, messages=tuple({"role": m["role"], "content": m.get("content")} for m in history))
        return call_strategy(self.strategy, "deliver", self.task_view, view)

    def prepare(self, index: int, system: str, history: Messages, layout: Layout) -> StepRequest:
        """deliver -> assemble: the request of step `index` in the agent's layout."""
        delivered = self.deliver(index, history)
        self.exchange_messages, self.exchanges, self.offered = [], [], delivered.tools
        if self.tool_format == "prompted" and delivered.tools:
            system = add_tools(system, [t.schema() for t in delivered.tools])
        o = self.options
        assembled = assemble(system, history, delivered, layout, policy=o.context_policy, limit=o.limit,
                             measure=self.measure, strict_limit=o.strict_limit)
        return StepRequest(assembled, delivered)

    def call(self, request: StepRequest, messages: Optional[Messages] = None, *, tools: bool = True) -> Completion:
        """complete -> ledger: one model call of the step (its request, or a variant of it such as ReAct's
        THINK), ledgered as an agent step with the memory that reached the model. A reply that calls a memory
        tool is answered here and the model called again (memory_calls.py): what returns calls none."""
        messages = request.messages if messages is None else messages
        self.offered = request.delivered.tools if tools else ()
        offered = {t.name: t for t in self.offered}
        if offered:
            self.known |= set(offered)
            self.ledger.memory_tools_offered = True
        completion = self._ledgered(request, messages, tools)
        for _ in range(memory_calls.MAX_ROUNDS):
            calls = memory_calls.find_calls(completion, self.known, self.tool_format,
                                            f"memory_{len(self.ledger.memory_calls)}") if self.known else []
            if not calls:
                return completion
            answered = [memory_calls.answer(c, offered, c.name not in self.known) for c in calls]
            for exchange in answered:
                self.ledger.add_memory_call(exchange.ids, error=exchange.error is not None)
                if exchange.error is None:
                    self.answers.add(exchange.answer)
            turn = memory_calls.exchange_messages(completion, calls, answered, self.tool_format)
            self.exchange_messages += turn
            self.exchanges += answered
            messages = [*messages, *turn]
            completion = self._ledgered(request, messages, tools)
        return memory_calls.without_memory_calls(completion, self.known, self.tool_format)

    def _ledgered(self, request: StepRequest, messages: Messages, tools: bool) -> Completion:
        completion = self.complete(messages, tools=tools)
        sent = request.assembled
        pulled = sum(self.counter(a) for a in self.answers if any(
            m.get("content") in (a, memory_calls.CODE_OUTPUT.format(answer=a)) for m in messages))
        self.ledger.add_agent_step(completion.usage, self.counter(sent.delivery.text) + pulled, sent.delivery.ids,
                                   dropped_ids=request.delivered.dropped, context_dropped_ids=sent.context_dropped,
                                   summarised_turns=sent.summarised_turns)
        return completion

    def take(self, index: int, system: str, history: Messages, layout: Layout) -> tuple[StepRequest, Completion]:
        """A step with one model call: deliver -> assemble -> complete -> ledger."""
        request = self.prepare(index, system, history, layout)
        return request, self.call(request)

    def answer(self, messages: Messages, delivery: Delivery) -> Completion:
        """answer_mode=rebuild: the call on the format's clean request, ledgered as phase "answer" with
        `delivery`'s memory. The format decides when it applies and what the reply becomes."""
        completion = self.complete(messages, tools=False)
        self.ledger.add_agent_step(completion.usage, self.counter(delivery.text), delivery.ids,
                                   dropped_ids=delivery.dropped, phase="answer")
        return completion

    def complete(self, messages: Messages, *, tools: bool) -> Completion:
        """The request with its cache marks (providers.cache_marks), sent."""
        o = self.options
        return self.send(cache_marks(messages, o.placement, self.client.model, o.prompt_caching), tools)
