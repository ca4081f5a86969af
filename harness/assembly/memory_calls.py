"""Memory-tool calls inside one agent step (docs/memory-tools.md): found in the model's reply, answered by the
strategy's `MemoryTool`, and written back into the step's request as an assistant tool call and its tool answer,
so the model can read the answer and act. The benchmark never sees them: its environment and evaluator receive
only the reply the step ends with.

A malformed call (arguments not a JSON object, a required argument missing or of the wrong type, the tool's own
MemoryToolError) or an unknown one (a memory tool this episode offered before but not at this step) is answered
with an `Error: ...` message, as a benchmark answers a bad tool call: the episode goes on and the row counts it.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass, replace
from typing import Any, Mapping, Optional, Sequence

from harness.serving.model_client import Completion, ToolCallText
from harness.serving.prompted_tools import call_block
from strategies import MemoryTool, MemoryToolError

TOOL_FORMATS = ("native", "prompted", "code")  # LiteLLM tools=, <tool_call> text, a call in a code agent's code
CODE_OUTPUT = "Output:\n{answer}"  # a code agent reads a memory answer as its code's output
_CODE = re.compile(r"```(?:python|py)?[ \t]*\n(.*?)```", re.S)
MAX_ROUNDS = 5  # memory-tool replies answered in one step; a model still calling after that ends the step


@dataclass(frozen=True)
class MemoryExchange:
    """One call and its answer, as the trajectory keeps it (`memory_calls` of the step's reply)."""

    call_id: str
    tool: str
    arguments: Any  # the parsed object, or the raw text when it did not parse
    answer: str
    ids: tuple[str, ...] = ()  # guidelines the answer gave
    error: Optional[str] = None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.call_id, "tool": self.tool, "arguments": self.arguments, "answer": self.answer,
                "ids": list(self.ids), "error": self.error}


def find_calls(completion: Completion, names: set[str], tool_format: str, call_id: str) -> list[ToolCallText]:
    """The reply's calls when it calls a memory tool (all of its calls: benchmark calls beside one are not run);
    none when it calls no memory tool. `names`: every memory tool the episode has offered; `call_id`: the id a
    prompted or code call gets (text calls have none)."""
    if tool_format == "code":
        return code_call(completion.content, names, call_id)
    if tool_format == "prompted":
        body = call_block(completion.content)
        if body is None:
            return []
        try:
            obj = json.loads(body)
        except json.JSONDecodeError:  # a broken block that names a memory tool is a malformed memory call
            name = next((n for n in sorted(names) if f'"{n}"' in body), None)
            return [ToolCallText(call_id, name, body)] if name else []
        name = obj.get("name") if isinstance(obj, dict) else None
        if name not in names:
            return []
        args = obj.get("arguments", {})
        return [ToolCallText(call_id, name, json.dumps(args, ensure_ascii=False))]
    calls = list(completion.tool_calls)
    return calls if any(c.name in names for c in calls) else []


def code_call(text: Optional[str], names: set[str], call_id: str) -> list[ToolCallText]:
    """A code agent's reply whose code is one call of a memory tool with literal arguments, e.g.
    `print(recall_guidelines(query="..."))`; positional arguments are taken in the order the schema lists them
    (the answer checks them). Any other code is the engine's to run, a memory tool inside it included."""
    blocks = [b.strip() for b in _CODE.findall(text or "") if b.strip()]
    try:
        body = ast.parse("\n\n".join(blocks)).body if blocks else []
    except SyntaxError:
        return []
    call = body[0].value if len(body) == 1 and isinstance(body[0], ast.Expr) else None
    if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "print" and call.args:
        call = call.args[0]
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id in names):
        return []
    try:
        args = {f"{i}": ast.literal_eval(a) for i, a in enumerate(call.args)}
        args.update({k.arg: ast.literal_eval(k.value) for k in call.keywords if k.arg})
    except ValueError:
        return []
    return [ToolCallText(call_id, call.func.id, json.dumps(args, ensure_ascii=False))]


def answer(call: ToolCallText, offered: Mapping[str, MemoryTool], benchmark_call: bool) -> MemoryExchange:
    """The strategy's answer to one call, or the error message the model reads instead (`benchmark_call`: a
    benchmark tool called in the same reply as a memory tool, which is not run, so its benchmark never sees it)."""

    def error(reason: str, args: Any) -> MemoryExchange:
        return MemoryExchange(call.id, call.name, args, f"Error: {reason}", error=reason)

    if benchmark_call:
        return error(f"{call.name!r} was not run: call a memory tool alone, then call {call.name!r} again",
                     call.arguments)
    tool = offered.get(call.name)
    if tool is None:
        return error(f"unknown memory tool {call.name!r} at this step (offered: {', '.join(sorted(offered))})",
                     call.arguments)
    try:
        args = json.loads(call.arguments) if call.arguments.strip() else {}
    except json.JSONDecodeError as exc:
        return error(f"{call.name}: arguments are not JSON ({exc.msg})", call.arguments)
    if isinstance(args, dict):  # a code call's positional arguments, in the schema's order
        order = list(tool.parameters.get("properties") or {})
        args = {(order[int(k)] if k.isdigit() and int(k) < len(order) else k): v for k, v in args.items()}
    problem = argument_problem(tool.parameters, args)
    if problem:
        return error(f"{call.name}: {problem}", args)
    try:
        delivery = tool.answer(args)
    except MemoryToolError as exc:
        return error(f"{call.name}: {exc}", args)
    return MemoryExchange(call.id, call.name, args, delivery.text, tuple(delivery.ids))


def argument_problem(schema: Mapping[str, Any], args: Any) -> Optional[str]:
    """What is wrong with `args` for a JSON schema's object, required names and string types; None: nothing."""
    if not isinstance(args, dict):
        return "arguments must be a JSON object"
    props = schema.get("properties") or {}
    missing = [k for k in schema.get("required") or () if k not in args]
    if missing:
        return f"missing required argument(s) {missing}"
    if schema.get("additionalProperties") is False and set(args) - set(props):
        return f"unexpected argument(s) {sorted(set(args) - set(props))}; takes {sorted(props)}"
    wrong = [k for k, v in args.items() if (props.get(k) or {}).get("type") == "string" and not isinstance(v, str)]
    return f"argument(s) {wrong} must be strings" if wrong else None


def exchange_messages(completion: Completion, calls: Sequence[ToolCallText], exchanges: Sequence[MemoryExchange],
                      tool_format: str = "native") -> list[dict[str, Any]]:
    """The reply's calls and their answers in OpenAI chat form (the prompted format renders them as text); for a
    code agent, its reply and the answer as the code's output, as AppWorld's conversation shows a run."""
    if tool_format == "code":
        return [{"role": "assistant", "content": completion.content},
                {"role": "user", "content": CODE_OUTPUT.format(answer=exchanges[0].answer)}]
    assistant = {"role": "assistant", "content": completion.content if not calls else None,
                 "tool_calls": [{"id": c.id, "type": "function",
                                 "function": {"name": c.name, "arguments": c.arguments}} for c in calls]}
    return [assistant, *({"role": "tool", "tool_call_id": e.call_id, "content": e.answer} for e in exchanges)]


def without_memory_calls(completion: Completion, names: set[str], tool_format: str) -> Completion:
    """The step's last reply once MAX_ROUNDS are spent, its memory calls removed: the benchmark must never see one
    (a reply left with nothing is the agent's malformed output, as an empty reply always is)."""
    if not find_calls(completion, names, tool_format, "memory_last"):
        return completion
    if tool_format != "native":
        return replace(completion, content=None)
    return replace(completion, tool_calls=tuple(c for c in completion.tool_calls if c.name not in names))
