"""τ²'s user simulator, calling the model through our client so its tokens are ledgered apart from the agent's."""

from __future__ import annotations

import json
from typing import Any, Optional

from tau2.data_model.message import MultiToolMessage, ToolCall, UserMessage
from tau2.user.user_simulator import UserSimulator
from tau2.utils.llm_utils import to_litellm_messages

from harness.benchmarks.tau2.agent import usage_dict
from harness.errors import UserSimulatorError
from harness.ledger import Ledger
from harness.serving.model_client import ModelClient
from harness.serving.prompted_tools import PromptedParseError, parse_reply, render_tools, to_text_messages


class LedgerUser(UserSimulator):
    """tau2's user simulator, calling the model through our client so its tokens are ledgered apart."""

    def __init__(self, tools=None, instructions=None, llm=None, llm_args=None, *,
                 client: Optional[ModelClient] = None, ledger: Optional[Ledger] = None, prompted: bool = False):
        super().__init__(tools=tools, instructions=instructions, llm=llm, llm_args=llm_args)
        self.client = client or ModelClient(model=llm or "", kwargs=dict(llm_args or {}))
        self.ledger = ledger if ledger is not None else Ledger()
        self.prompted = prompted

    def set_seed(self, seed: int) -> None:
        self.client.kwargs["seed"] = seed

    def _generate_next_message(self, message, state):
        if isinstance(message, MultiToolMessage):
            state.messages.extend(message.tool_messages)
        else:
            state.messages.append(message)
        messages = to_litellm_messages(state.system_messages + state.flip_roles())
        tools = [t.openai_schema for t in self.tools] if self.tools else None
        if self.prompted:
            return self._prompted_turn(messages, tools, state)
        completion = self.client.complete(messages, tools=tools)
        self.ledger.add_user_call(completion.usage)
        calls = None
        if completion.tool_calls:
            try:
                calls = [ToolCall(id=c.id, name=c.name, arguments=json.loads(c.arguments or "{}"), requestor="user")
                         for c in completion.tool_calls]
            except json.JSONDecodeError as exc:
                raise UserSimulatorError(f"user simulator wrote a malformed tool call: {exc.msg}") from None
        if not calls and not (completion.content or "").strip():
            raise UserSimulatorError("user simulator returned an empty message")
        reply = UserMessage(role="user", content=None if calls else completion.content, tool_calls=calls,
                            cost=completion.usage.cost_usd, usage=usage_dict(completion.usage))
        state.messages.append(reply)
        return reply, state

    def _prompted_turn(self, messages: list[dict[str, Any]], tools: Optional[list[dict[str, Any]]], state):
        """The simulated user on a model without native tools (its tools, if any, rendered into the prompt)."""
        if tools:
            messages = [{**messages[0], "content": f"{messages[0]['content']}\n\n{render_tools(tools)}"},
                        *messages[1:]]
        completion = self.client.complete(to_text_messages(messages))
        self.ledger.add_user_call(completion.usage)
        try:
            parsed = parse_reply(completion.content, [t["function"]["name"] for t in tools or []])
        except PromptedParseError as exc:  # the simulator, not the agent under test, failed
            raise UserSimulatorError(f"user simulator: {exc}") from None
        calls = None
        if parsed.call is not None:
            calls = [ToolCall(id=f"user_call_{len(self.ledger.user_calls)}", name=parsed.call.name,
                              arguments=parsed.call.arguments, requestor="user")]
        reply = UserMessage(role="user", content=parsed.message, tool_calls=calls,
                            cost=completion.usage.cost_usd, usage=usage_dict(completion.usage))
        state.messages.append(reply)
        return reply, state
