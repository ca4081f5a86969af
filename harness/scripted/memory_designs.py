"""`memdeliv-scripted-designs/roles`: SCRIPTED answers (not a language model) to the prompts of the field's memory
designs (strategies/reasoning_bank/prompts.py), served through LiteLLM so their builders and online updates run
offline on the scripted and simulated models.

- ReasoningBank's judge: `Status: "success"` when the agent made at least one tool call, else `"failure"`;
- its extractor: one memory item (two when the agent called two tools or more) filled in from the tool names the
  trajectory shows, in the reference's Markdown format;
- AWM's induction: one workflow per distinct pair of first two tools of the tasks shown (at most 3), after
  `# Summary Workflows`;
- Dynamic Cheatsheet's curator: the previous cheatsheet's entries, plus one for the episode's first tool (its count
  raised when the entry is there already), between <cheatsheet> tags; the retrieval-synthesis curator likewise,
  with the first tool of the retrieved earlier episodes.
They are templates, NOT learned lessons.
"""

from __future__ import annotations

import re
from typing import Any

import litellm
from litellm import CustomLLM, ModelResponse

from harness.serving.providers import Provider, register_provider
from strategies.awm.strategy import INSTRUCTION as AWM_INSTRUCTION
from strategies.awm.strategy import SUMMARY
from strategies.dynamic_cheatsheet.retrieval_synthesis import RS_CURATOR_SYSTEM
from strategies.dynamic_cheatsheet.strategy import CURATOR_SYSTEM
from memory_kit.judge import JUDGE_SYSTEM
from memory_kit.role_llm import SCRIPTED_DESIGNS

PROVIDER = SCRIPTED_DESIGNS.split("/", 1)[0]
_TOOL_CALL = re.compile(r"^\[assistant -> tool\] (\w+)\(", re.M)
_ENTRY = re.compile(r"^- \[dc-(\d+)\] (.*) \(count: (\d+)\)$", re.M)


def _item(i: int, title: str, description: str, content: str) -> str:
    return f"# Memory Item {i}\n## Title {title}\n## Description {description}\n## Content {content}\n"


def answer(system: str, prompt: str) -> str:
    tools = list(dict.fromkeys(_TOOL_CALL.findall(prompt)))
    if system.strip() == AWM_INSTRUCTION.strip():
        return _workflows(prompt.split("## Tasks to summarise", 1)[-1])
    if system.strip() == CURATOR_SYSTEM.strip():
        return _cheatsheet(prompt.split("## Previous cheatsheet", 1)[-1], tools)
    if system.strip() == RS_CURATOR_SYSTEM.strip():  # the tools come from the retrieved earlier episodes
        return _cheatsheet(prompt.split("## Notes for cheatsheet", 1)[0], tools)
    if system.strip() == JUDGE_SYSTEM.strip():
        return f"Thoughts: SCRIPTED judge: {len(tools)} distinct tools called.\nStatus: \"" \
               f"{'success' if tools else 'failure'}\""
    if not tools:
        return _item(1, "Establish the request first", "Ask what the user needs before acting.",
                     "Read the user's request back and confirm it before calling any tool.")
    failed = "failed" in system.lower()
    items = [_item(1, f"Start with {tools[0]}", f"Open similar tasks by calling {tools[0]}.",
                   ("Had the agent checked with " if failed else "Calling ") + f"{tools[0]} first, the later "
                   "steps rest on facts the tools returned, not guesses.")]
    if len(tools) > 1:
        items.append(_item(2, f"Then {tools[-1]}", f"Finish with {tools[-1]} once the facts are known.",
                           f"Confirm the change with the user before {tools[-1]}."))
    return "\n".join(items)


def _workflows(tasks: str) -> str:
    pairs = [tuple(re.findall(r"(\w+)\(", line)[:2]) for line in tasks.splitlines() if line.startswith("Actions:")]
    kept = list(dict.fromkeys(p for p in pairs if len(p) == 2))[:3]
    lines = [f"Workflow {i}: Open like earlier tasks: {a}({{...}}) -> {b}({{...}})" for i, (a, b) in
             enumerate(kept, start=1)]
    return f"{SUMMARY}\n\n" + "\n".join(lines)


def _cheatsheet(previous: str, tools: list[str]) -> str:
    entries = {text: [int(n), int(count)] for n, text, count in _ENTRY.findall(previous)}
    if tools:
        text = f"Call {tools[0]} early in tasks like this one, before any change"
        entries.setdefault(text, [len(entries) + 1, 0])[1] += 1
    lines = [f"- [dc-{n}] {text} (count: {count})" for text, (n, count) in sorted(entries.items(), key=lambda e: e[1])]
    return "<cheatsheet>\n" + ("\n".join(lines) or "(empty)") + "\n</cheatsheet>"


class ScriptedDesigns(CustomLLM):
    def completion(self, model: str, messages: list[dict[str, Any]], *args: Any, **kwargs: Any) -> ModelResponse:
        system = next((str(m["content"]) for m in messages if m.get("role") == "system"), "")
        prompt = str(messages[-1]["content"])
        text = answer(system, prompt)
        n_in = litellm.token_counter(model="gpt-4o", messages=[{"role": "user", "content": system + prompt}])
        n_out = litellm.token_counter(model="gpt-4o", text=text)
        return ModelResponse(model=SCRIPTED_DESIGNS, choices=[{"message": {"role": "assistant", "content": text}}],
                             usage={"prompt_tokens": n_in, "completion_tokens": n_out, "total_tokens": n_in + n_out})


def install() -> None:
    """Register the provider with LiteLLM (idempotent)."""
    register_provider(PROVIDER, ScriptedDesigns(), replace=False)


SERVED = Provider(PROVIDER, install)  # its entry point (pyproject.toml, memdeliv.providers)
