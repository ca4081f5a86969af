"""A τ² episode's files and labels: tau2's `Results` format (so `tau2 view` opens a trajectory), the
conversation as the strategy protocol's messages, the evaluator's report, and tau2's termination reasons as
our error labels."""

from __future__ import annotations

import time
from typing import Any, Optional

from tau2.data_model.message import AssistantMessage, ToolMessage, UserMessage
from tau2.data_model.simulation import RewardInfo, SimulationRun, TerminationReason
from tau2.orchestrator.orchestrator import Orchestrator
from tau2.utils.llm_utils import to_litellm_messages
from tau2.utils.utils import get_now

from harness.errors import AGENT, MAX_STEPS, USER_SIMULATOR


# tau2 termination reason -> our error label (None = ended normally, the evaluator decides success)
ERROR_OF = {
    TerminationReason.AGENT_STOP: None,
    TerminationReason.USER_STOP: None,
    TerminationReason.MAX_STEPS: MAX_STEPS,
    TerminationReason.TOO_MANY_ERRORS: AGENT,
    TerminationReason.AGENT_ERROR: AGENT,
    TerminationReason.JUDGE_STOP: AGENT,
    TerminationReason.USER_ERROR: USER_SIMULATOR,  # tau2 counts it as a failure too
}


def trajectory_messages(messages: list[Any]) -> tuple[dict[str, Any], ...]:
    """The conversation as the agent saw it, in tau2's litellm conversion, plus `raw_content`: the text the agent
    wrote beside a tool call. tau2 keeps a message to text or calls (the orchestrator rejects both), so that text
    lives only in raw_data; ACE reads the bullet ids the agent cited from it.

    The user simulator's own tool calls and their results (telecom: the user acts on its phone) go between the
    user and its environment, never to the agent, so they are left out: every learner reads this conversation,
    and a learner sees only what the agent saw. The trajectory file keeps them (tau2's `Results`)."""
    out = []
    for message in messages:
        if user_side(message):
            continue
        for converted in to_litellm_messages([message]):
            raw = getattr(message, "raw_data", None) or {}
            text = raw.get("content") if isinstance(raw, dict) else None
            if converted.get("role") == "assistant" and converted.get("tool_calls") and isinstance(text, str) \
                    and text.strip() and not converted.get("content"):
                converted = {**converted, "raw_content": text}
            out.append(converted)
    return tuple(out)


def user_side(message: Any) -> bool:
    """A user simulator's tool call, or its environment's answer to one: never shown to the agent."""
    if isinstance(message, UserMessage):
        return bool(message.is_tool_call())
    return isinstance(message, ToolMessage) and message.requestor == "user"


def feedback(reward_info: Optional[RewardInfo]) -> str:
    """The evaluator's own report (DB check, communicated facts), for reflectors that may see it."""
    if reward_info is None:
        return ""
    parts = [f"reward={reward_info.reward}"]
    if reward_info.db_check is not None:
        parts.append(f"db_match={reward_info.db_check.db_match}")
    for check in reward_info.communicate_checks or []:
        parts.append(f"communicated {check.info!r}: {check.met}")
    if reward_info.info and reward_info.info.get("note"):
        parts.append(str(reward_info.info["note"]))
    return "; ".join(parts)


def partial_simulation(orchestrator: Orchestrator, start_time: str, started: float,
                       raw: Optional[dict[str, Any]] = None) -> SimulationRun:
    """The trajectory so far, ended as an agent error (the evaluator then gives reward 0)."""
    messages = orchestrator.get_trajectory()
    if raw is not None:  # keep the unparseable output in the trajectory, where a reader looks for it
        messages.append(AssistantMessage(role="assistant", content=f"[unparseable model output] {raw.get('content')}",
                                         raw_data=raw, usage=raw.get("usage"), turn_idx=len(messages)))
    return SimulationRun(id=f"{orchestrator.task.id}_partial", task_id=orchestrator.task.id, start_time=start_time,
                         end_time=get_now(), duration=time.perf_counter() - started,
                         termination_reason=TerminationReason.AGENT_ERROR, messages=messages)

