"""ACE (Agentic Context Engineering): a playbook of counted bullets, grown by Reflector + Curator deltas.

Modules: playbook (the data), deltas (Curator operations), pruning (dedup, token budget), llm (JSON calls),
roles (Reflector / Curator prompts), adapt (one update), strategy (`ace`), online (`ace_online`).
"""

from strategies.ace.adapt import AceSettings, Adapter, UpdateReport
from strategies.ace.deltas import MergeResult, apply_operations
from strategies.ace.llm import JsonLLM, RoleError
from strategies.ace.playbook import KIND, SECTIONS, Bullet, Playbook, load_playbook
from strategies.ace.pruning import EmbeddingCache, deduplicate, drop_order, enforce_budget
from strategies.ace.online import AceOnline
from strategies.ace.strategy import AcePlaybook
from strategies.memory_file import read_playbook_or_guidelines  # the family's reader, beside load_memory

__all__ = [
    "AceSettings", "Adapter", "UpdateReport", "MergeResult", "apply_operations", "JsonLLM", "RoleError", "KIND",
    "SECTIONS", "Bullet", "Playbook", "load_playbook", "read_playbook_or_guidelines", "EmbeddingCache",
    "deduplicate", "drop_order", "enforce_budget", "AceOnline", "AcePlaybook",
]
