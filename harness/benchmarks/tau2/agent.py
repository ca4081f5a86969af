"""τ²'s agents: `MemoryAgent` (tau2's LLMAgent with a memory block delivered by a strategy at every step, its
calls made through our ModelClient and ledgered) and `ReactMemoryAgent` (the same with tau2-bench's two-phase
ReAct turn, react.py). `agent_class(kind)` picks one for `benchmark.agent`."""

from __future__ import annotations

import json
from typing import Any, Optional

from tau2.agent.base import AgentError
from tau2.agent.llm_agent import LLMAgent, LLMAgentState
from tau2.data_model.message import AssistantMessage, MultiToolMessage, SystemMessage, ToolCall, ToolMessage
from tau2.utils.llm_utils import to_litellm_messages

from harness.assembly.layout import chat_layout
from harness.assembly.observations import cut_tool_results
from harness.assembly.options import AssemblyOptions
from harness.assembly.providers import request_tokens
from harness.assembly.rebuild import rebuild_request, turn_has_tool_calls
from harness.assembly.step import AgentStep, StepRequest
from harness.benchmarks.tau2.react import ReactTurn
from harness.ledger import Ledger, MemoryTokenCounter
from harness.serving.model_client import ModelClient
from harness.serving.prompted_tools import PromptedParseError, parse_reply, render_tools, to_text_messages
from strategies import Delivery, Strategy, TaskView

AGENT_NAME = "memdeliv_agent"  # our agent's name in tau2's registry and in the Results files' info
AGENT_KINDS = ("tool_calling", "react")  # react: tau2-bench's ReAct example scheme (react.py)


class MalformedOutput(AgentError):
    """The model answered with something that is not a valid message or tool call."""

    def __init__(self, reason: str, raw: dict[str, Any]):
        super().__init__(reason)
        self.raw = raw


class MemoryAgent(LLMAgent):
    """tau2's LLM agent with a memory block delivered by a strategy at every step (the shared AgentStep;
    placement and the tool-result cut come from `assembly_options`, τ²'s defaults when None)."""

    def __init__(self, tools, domain_policy, llm=None, llm_args=None, *, strategy: Optional[Strategy] = None,
                 task_view: Optional[TaskView] = None, client: Optional[ModelClient] = None,
                 ledger: Optional[Ledger] = None, memory_counter: Optional[MemoryTokenCounter] = None,
                 prompted: bool = False, assembly_options: Optional[AssemblyOptions] = None):
        super().__init__(tools=tools, domain_policy=domain_policy, llm=llm, llm_args=llm_args)
        self.client = client or ModelClient(model=llm or "", kwargs=dict(self.llm_args))
        self.ledger = ledger if ledger is not None else Ledger()
        self.opts = assembly_options or AssemblyOptions()
        self.tool_schemas = [t.openai_schema for t in tools]
        self.tool_names = {t.name for t in tools}
        self.prompted = prompted  # tool schemas in the system prompt, replies parsed from text
        self.tools_block = render_tools(self.tool_schemas) if prompted else ""
        self.layout = chat_layout(self.opts.placement, self.client.model)
        self.step = AgentStep(self.client, strategy, task_view, self.ledger,
                              memory_counter or MemoryTokenCounter(self.client.model), self.opts,
                              measure=self._measure, send=self._send,
                              tool_format="prompted" if prompted else "native")

    def set_seed(self, seed: int) -> None:
        self.client.kwargs["seed"] = seed

    def generate_next_message(self, message, state: LLMAgentState):
        if isinstance(message, MultiToolMessage):
            state.messages.extend(message.tool_messages)
        elif message is not None:
            state.messages.append(message)
        history = cut_tool_results(to_litellm_messages(state.messages), self.opts.max_observation_chars)
        # Prompted tool schemas never change, so they sit before the memory block (placed after the policy by
        # default: in the stable, cacheable prefix, as IBM's τ² runs did).
        base = f"{self.system_prompt}\n\n{self.tools_block}" if self.prompted else self.system_prompt
        request = self.step.prepare(len(self.ledger.agent_steps), base, history, self.layout)
        state.system_messages = [SystemMessage(role="system", content=request.messages[0]["content"])]
        reply = self.respond(request)
        reply = self._keep_memory_calls(state, reply)
        if self.opts.answer_mode == "rebuild" and not reply.tool_calls and turn_has_tool_calls(history):
            reply = self._rebuild_answer(reply, request.delivered, history)
        state.messages.append(reply)
        return reply, state

    def respond(self, request: StepRequest) -> AssistantMessage:
        """One agent turn from the step's request (the react variant makes two calls here)."""
        return self._to_message(self.step.call(request))

    def _keep_memory_calls(self, state: LLMAgentState, reply: AssistantMessage) -> AssistantMessage:
        """This turn's memory-tool calls and answers (answered inside the step) join the agent's own history, so
        later steps show them to the model, and the reply's raw_data, so the trajectory file shows them. tau2's
        orchestrator, environment and evaluator receive only the reply (docs/memory-tools.md)."""
        if not self.step.exchanges:
            return reply
        for m in self.step.exchange_messages:
            if m["role"] == "tool":
                state.messages.append(ToolMessage(id=m["tool_call_id"], role="tool", content=m["content"],
                                                  requestor="assistant", error=m["content"].startswith("Error:")))
                continue
            calls = [ToolCall(id=c["id"], name=c["function"]["name"], arguments=_arguments(c["function"]["arguments"]))
                     for c in m["tool_calls"]]
            state.messages.append(AssistantMessage(role="assistant", content=None, tool_calls=calls))
        raw = {**(reply.raw_data or {}), "memory_calls": [e.to_dict() for e in self.step.exchanges]}
        return reply.model_copy(update={"raw_data": raw})

    def _measure(self, messages: list[dict[str, Any]]) -> int:
        if self.prompted:
            return request_tokens(self.client.model, to_text_messages(messages))
        return request_tokens(self.client.model, messages, self.tool_schemas + self.step.memory_schemas)

    def _send(self, messages: list[dict[str, Any]], tools: bool):
        if self.prompted:
            return self.client.complete(to_text_messages(messages))
        return self.client.complete(messages, tools=self.tool_schemas + self.step.memory_schemas if tools else None)

    def _rebuild_answer(self, working: AssistantMessage, delivery: Delivery, history) -> AssistantMessage:
        """answer_mode=rebuild: the reply to the user regenerated from a clean request (no tool scaffolding)."""
        messages = rebuild_request(self.system_prompt, history, delivery.text, placement=self.opts.placement,
                                   model=self.client.model, max_chars=self.opts.max_observation_chars)
        completion = self.step.answer(messages, delivery)
        text = (completion.content or "").strip()
        raw = {**(working.raw_data or {}), "working_reply": working.content, "answer_mode": "rebuild",
               "answer_usage": usage_dict(completion.usage)}
        if not text or "<tool_call>" in text:  # nothing usable: the working reply stands, and the trajectory says so
            raw["rebuild_discarded"] = completion.content
            return working.model_copy(update={"raw_data": raw})
        costs = (working.cost, completion.usage.cost_usd)
        return AssistantMessage(role="assistant", content=text, cost=None if None in costs else sum(costs),
                                usage=working.usage, raw_data=raw)

    def _to_message(self, completion) -> AssistantMessage:
        usage = usage_dict(completion.usage)
        raw = {"content": completion.content, "finish_reason": completion.finish_reason,
               "tool_calls": [c.__dict__ for c in completion.tool_calls],
               "usage": usage}  # an unparseable step still cost tokens: the trajectory keeps them
        if self.prompted:
            return self._parse_prompted(completion, raw, usage)
        calls = []
        for call in completion.tool_calls:
            try:
                args = json.loads(call.arguments) if call.arguments.strip() else {}
            except json.JSONDecodeError as exc:
                raise MalformedOutput(f"tool call {call.name!r}: arguments are not JSON ({exc.msg})", raw) from None
            if not isinstance(args, dict):
                raise MalformedOutput(f"tool call {call.name!r}: arguments must be a JSON object", raw)
            if not call.name:
                raise MalformedOutput("tool call without a tool name", raw)
            calls.append(ToolCall(id=call.id, name=call.name, arguments=args))
        content = completion.content if completion.content and completion.content.strip() else None
        if not calls and content is None:
            raise MalformedOutput("empty response: no text and no tool call", raw)
        return AssistantMessage(role="assistant", content=None if calls else content, tool_calls=calls or None,
                                cost=completion.usage.cost_usd, usage=usage, raw_data=raw)

    def _parse_prompted(self, completion, raw: dict[str, Any], usage: dict[str, Any]) -> AssistantMessage:
        try:
            reply = parse_reply(completion.content, self.tool_names)
        except PromptedParseError as exc:
            raise MalformedOutput(f"prompted tool call: {exc}", raw) from None
        calls = None
        if reply.call is not None:
            calls = [ToolCall(id=f"call_{len(self.ledger.agent_steps)}", name=reply.call.name,
                              arguments=reply.call.arguments)]
        return AssistantMessage(role="assistant", content=reply.message, tool_calls=calls,
                                cost=completion.usage.cost_usd, usage=usage, raw_data=raw)


class ReactMemoryAgent(ReactTurn, MemoryAgent):
    """benchmark.agent=react: MemoryAgent with tau2-bench's two-phase ReAct turn (react.py)."""


def agent_class(kind: str) -> type:
    return ReactMemoryAgent if kind == "react" else MemoryAgent


def _arguments(text: str) -> dict[str, Any]:
    """A memory call's arguments as tau2's ToolCall holds them (an object; a malformed call keeps its raw text)."""
    try:
        value = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError:
        value = None
    return value if isinstance(value, dict) else {"raw_arguments": text}


def usage_dict(usage) -> dict[str, Any]:
    return {"prompt_tokens": usage.prompt_tokens, "completion_tokens": usage.completion_tokens,
            "cached_tokens": usage.cached_tokens}
