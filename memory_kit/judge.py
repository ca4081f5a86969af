"""The self-judge of a finished trajectory, ReasoningBank's LLM autoeval (google-research/google-research
ReasoningBank/WebArena: autoeval/), used by `reasoning_bank` and by `awm_online` (whose reference judges with the
same autoeval criterion): the judge's prompt, the user turn it is shown (`**Query:**` then `**Trajectory:**`, the
extractor's turn too), the verdict's parsing and the judge's temperature. It decides from the trajectory alone
whether the task was accomplished: no ground truth."""

from __future__ import annotations

import re

from strategies import Trajectory
from memory_kit.extraction import query_of, render_trajectory

JUDGE_TEMPERATURE = 0.0  # autoeval/clients.py: every judge client calls its model at temperature 0

JUDGE_SYSTEM = """You are an expert evaluator of tool-using customer-service agents. You are given a user query \
and the agent's trajectory (its messages and tool calls, and what the tools returned). Decide whether the agent \
accomplished what the user asked, following the policy it was given, judging from the trajectory alone.

Answer in this format:
Thoughts: <your reasoning>
Status: "success" or "failure"
"""

_STATUS = re.compile(r"status\s*:\s*\"?\s*(success|failure)", re.I)


def user_turn(trajectory: Trajectory) -> str:
    return f"**Query:** {query_of(trajectory)}\n\n**Trajectory:**\n{render_trajectory(trajectory)}"


def parse_status(text: str) -> bool | None:
    """The judge's verdict: True success, False failure, None when it gave none."""
    found = _STATUS.findall(text or "")
    return None if not found else found[-1].lower() == "success"
