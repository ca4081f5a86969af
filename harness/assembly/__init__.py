"""Request assembly: what one model call contains, where memory sits, and what is dropped when it does not fit
(docs/request-assembly.md; README.md here: the agent step and how to add an agent format).

  options.py       the settings (placement, context policy, answer mode) and their valid values: one definition
  job_config.py    a job's config -> AssemblyOptions; the job-key suffix of non-default settings
  providers.py     what differs by provider: trailing role, prompt-cache marks, token counts, the window
  observations.py  the cut of long tool / code outputs
  summary.py       the code-made summary of folded turns
  layout.py        Layout: where memory goes and what a turn is; `chat_layout` for a chat with tool messages
  request.py       assemble(): one step's request, fitted to the window by the context policy
  rebuild.py       answer_mode=rebuild's clean request for a chat with tool calls
  step.py          AgentStep: deliver -> assemble -> (cache marks) -> complete -> ledger -> (rebuild)

Names are loaded on first use (`assembly.assemble`, `from harness.assembly import Layout`), so importing
`harness.assembly.options` (as analysis does) loads neither LiteLLM nor the model client.
"""

from __future__ import annotations

import importlib
from typing import Any

_HOME = {
    "options": ("PLACEMENTS", "DEFAULT_PLACEMENT", "CONTEXT_POLICIES", "ANSWER_MODES", "DEFAULTS",
                "MAX_OBSERVATION_CHARS", "AssemblyOptions", "check"),
    "job_config": ("options_for", "variant_suffix"),
    "providers": ("SAFETY", "CACHE_MARK", "provider_of", "is_anthropic", "trailing_role", "cache_marks",
                  "request_tokens", "context_limit"),
    "observations": ("TRUNCATED", "cut_observation", "cut_tool_results"),
    "summary": ("SUMMARY_RESULT_CHARS", "SUMMARY_TEXT_CHARS", "SUMMARY_MAX_LINES", "clip", "call_text",
                "summarise", "summary_message"),
    "layout": ("Layout", "place", "split_units", "chat_layout", "memory_first"),
    "request": ("Assembled", "assemble", "ContextOverflow", "Delivery"),
    "rebuild": ("turn_has_tool_calls", "rebuild_request"),
    "step": ("AgentStep", "StepRequest"),
}
_WHERE = {name: module for module, names in _HOME.items() for name in names}
__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
    globals()[name] = value
    return value
