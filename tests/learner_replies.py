"""FAKE replies to a strategy's own calls, for the fault server (tests/fault_server.py `learner_reply`): ACE's
Reflector and Curator answer minimal valid JSON (one ADD per episode), the zoo's judges, extractors, curators and
inducers the SCRIPTED designs model's templates (harness/scripted/memory_designs.py). Any other request: None."""

from __future__ import annotations

import json

from harness.scripted.memory_designs import answer
from strategies.ace.playbook import SECTION_SETS
from strategies.ace.roles import REFLECTOR_SYSTEM
from strategies.awm.strategy import INSTRUCTION
from strategies.dynamic_cheatsheet.retrieval_synthesis import RS_CURATOR_SYSTEM
from strategies.dynamic_cheatsheet.strategy import CURATOR_SYSTEM
from strategies.reasoning_bank.prompts import FAILURE_SYSTEM, SUCCESS_SYSTEM
from memory_kit.judge import JUDGE_SYSTEM

DESIGNS = {p.strip() for p in (INSTRUCTION, RS_CURATOR_SYSTEM, CURATOR_SYSTEM, FAILURE_SYSTEM, JUDGE_SYSTEM,
                               SUCCESS_SYSTEM)}


def learner_reply(system: str, prompt: str) -> str | None:
    if system.strip() == REFLECTOR_SYSTEM.strip():
        return json.dumps({"reasoning": "", "error_analysis": "none", "root_cause": "", "correct_approach": "",
                           "key_insight": "check first", "bullet_tags": []})
    if system.startswith("You are the Curator of an agent's playbook"):
        return json.dumps({"reasoning": "", "operations": [
            {"type": "ADD", "section": SECTION_SETS["generic"][0], "content": "Look the order up before changing it."}]})
    if system.strip() in DESIGNS:
        return answer(system, prompt)
    return None
