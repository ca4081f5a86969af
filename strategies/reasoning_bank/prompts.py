"""ReasoningBank's prompts and their parsing (Ouyang et al. 2025, google-research/google-research
ReasoningBank/WebArena: prompt/instruction.py, induce_memory.py, autoeval/).

The structure follows the reference (its wording is for web navigation; ours names a tool-using agent): a
*judge* decides from the trajectory alone whether the task was accomplished (the reference's default criterion
is its LLM autoeval, not the benchmark's reward: memory_kit/judge.py, which awm_online shares); a success
trajectory and a failure trajectory get two different extraction instructions (why it worked / why it failed and
how to avoid it), each asking for at most 3 memory items in the Markdown format `# Memory Item i` / `## Title` /
`## Description` / `## Content`, general rather than about the specific task; the user turn (memory_kit/judge.py)
is `**Query:**` then `**Trajectory:**`.
"""

from __future__ import annotations

import re

MAX_ITEMS = 3  # "at most 3 memory items" (instruction.py SUCCESSFUL_SI / FAILED_SI)

_FORMAT = """## Output format
Follow this Markdown format strictly, one block per item:

```
# Memory Item i
## Title <a short title>
## Description <one sentence summarising the item>
## Content <1-3 sentences: the insight, stated so it carries over to other tasks>
```
"""

SUCCESS_SYSTEM = f"""You are an expert on tool-using customer-service agents. You are given a user query and the \
trajectory of an agent that **accomplished the task**.

## What to do
Distil memory items from this successful trajectory that will help on similar tasks in future.

## Rules
  - First reason about why the trajectory succeeded; then write the items.
  - Write *at most {MAX_ITEMS}* memory items, none repeating or overlapping another.
  - Do not name the specific user, order, ids or strings of this task: state insights that generalise.

{_FORMAT}"""

FAILURE_SYSTEM = f"""You are an expert on tool-using customer-service agents. You are given a user query and the \
trajectory of an agent that **tried to accomplish the task and failed**.

## What to do
Distil memory items from this failed trajectory that will help on similar tasks in future.

## Rules
  - First reflect on why the trajectory failed; then write the lessons learned or the strategies that would \
prevent this failure.
  - Write *at most {MAX_ITEMS}* memory items, none repeating or overlapping another.
  - Do not name the specific user, order, ids or strings of this task: state insights that generalise.

{_FORMAT}"""

_ITEM = re.compile(r"^#\s*Memory Item[^\n]*\n(.*?)(?=^#\s*Memory Item|\Z)", re.S | re.M | re.I)
_FIELD = re.compile(r"^##\s*(Title|Description|Content)\s*:?\s*(.*?)(?=^##\s|\Z)", re.S | re.M | re.I)



def parse_items(text: str, max_items: int = MAX_ITEMS) -> list[tuple[str, str, str]]:
    """(title, description, content) of each complete item, at most `max_items`, each field on one line."""
    out = []
    for block in _ITEM.findall((text or "").replace("```", "")):
        fields = {name.lower(): " ".join(value.split()) for name, value in _FIELD.findall(block)}
        if all(fields.get(k) for k in ("title", "description", "content")):
            out.append((fields["title"], fields["description"], fields["content"]))
    return out[:max_items]
