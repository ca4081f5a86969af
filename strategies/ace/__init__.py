"""ACE (Agentic Context Engineering): a playbook of counted bullets, grown by Reflector + Curator deltas.

Modules: playbook (the data), deltas (Curator operations), pruning (dedup, token budget), llm (JSON calls),
roles (Reflector / Curator prompts), adapt (one update), strategy (`ace`, and reading a playbook or a guideline
artifact as one), online (`ace_online`), retrieval (`ace_retrieval`). The entry points name the modules.
"""
