"""`benchmark.agent=react`: the two-phase scheme of tau2-bench's ReAct example agent, on MemoryAgent.

tau2-bench's `examples/agents/react_agent.py` (the agent behind IBM's τ² numbers) makes two model calls at every
step: THINK (the conversation plus an instruction to reason, no tools offered) and ACT (the conversation plus
the reasoning, tools offered); the reasoning is not kept in the history. This is our own code for that scheme.
Both calls carry the same system prompt with the memory block, and both are ledgered as agent calls (so `steps`
counts two per turn). The system prompt stays MemoryAgent's (tau2's LLMAgent prompt and the domain policy), so
`tool_calling` and `react` differ only in the two phases.

A mixin, not a MemoryAgent subclass, so this module does not import the adapter that picks it (adapter.py
composes `ReactMemoryAgent(ReactTurn, MemoryAgent)`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tau2.data_model.message import AssistantMessage

from harness.assembly.step import AgentStep, StepRequest

if TYPE_CHECKING:
    from harness.serving.model_client import Completion

THINK = ("Before you answer, think step by step about what to do next: what the user wants, what you already "
         "know, whether the policy requires a step first, and whether to call a tool or reply to the user. "
         "Write only your reasoning, briefly.")
ACT = ("Now act on your reasoning: call the right tool if you need information or must perform an operation; "
       "otherwise reply to the user.\n\nYour reasoning:\n{reasoning}")


class ReactTurn:
    """Overrides MemoryAgent.respond with THINK then ACT: two calls of the same agent step (its request plus
    one instruction), each ledgered as an agent call (harness/assembly/step.py)."""

    # MemoryAgent's, which this mixes into: declared for the type checker only (at run time the MRO finds them there)
    if TYPE_CHECKING:
        step: AgentStep

        def _to_message(self, completion: Completion) -> AssistantMessage: ...

    def respond(self, request: StepRequest) -> AssistantMessage:
        thought = self.step.call(request, [*request.messages, {"role": "user", "content": THINK}], tools=False)
        reasoning = (thought.content or "").strip()
        act = [*request.messages, {"role": "user", "content": ACT.format(reasoning=reasoning)}]
        return self._to_message(self.step.call(request, act))
