"""Request assembly: what one model call contains, where memory sits, and what is dropped when it does not fit.

Pure functions over LiteLLM message lists and strategy Deliveries; the τ² and AppWorld agents call them
(docs/request-assembly.md). Following seed 002: every turn is one self-contained request; when it would
exceed the model's window (`benchmark.context_policy=priority_drop`) blocks are dropped by priority, never
by cutting the tail:
  1. the oldest conversation turns after the first user message (a turn: a user message, an agent reply, or
     one tool call with its result), folded into a summary MADE BY CODE (the user's earlier words, the tool
     calls made, the first characters of each result), never the newest tool round;
  2. memory items, lowest priority first (the strategy's own order, through `Delivery.refit`);
  3. the oldest lines of that summary (it grows with every folded turn), noted in the summary;
and never the system instructions, the policy, the first or the latest user message. Every drop is written into the
request ("[3 earlier turns summarised ...]", "(5 lower-priority lessons omitted ...)").
`answer_mode=rebuild` regenerates a text reply that followed tool calls from a clean request (no tool
scaffolding), and `cache_marks` marks the stable prefix for providers with explicit prompt caching.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any, Callable, Optional, Sequence

from harness.model_client import ContextOverflow
from strategies.base import Delivery

PLACEMENTS = ("after_policy", "first_user_message", "end_of_conversation")
CONTEXT_POLICIES = ("fail", "priority_drop")
ANSWER_MODES = ("plain", "rebuild")
DEFAULTS = {"context_policy": "fail", "answer_mode": "plain"}  # placement's default is the benchmark's own

SAFETY = 0.9  # fraction of the window the assembly aims for: token counts are tokenizer approximations
SUMMARY_RESULT_CHARS = 200  # per tool result folded into the code-made summary
SUMMARY_TEXT_CHARS = 300  # per user / assistant message folded into it
SUMMARY_MAX_LINES = 4096  # upper bound for the search over how many summary lines to keep
CACHE_MARK = {"type": "ephemeral"}

Messages = list[dict[str, Any]]
Measure = Callable[[Messages], int]


# --- shared cut of long tool / code outputs --------------------------------------------------------------
TRUNCATED = "[truncated]"


def cut_observation(text: str, limit: Optional[int], hint: str = "") -> str:
    """`text` cut to `limit` characters with a note that the rest exists, was not shown, and must not be
    guessed (τ² tool results and AppWorld outputs say the same thing). limit None / <= 0: unchanged."""
    if not limit or limit <= 0 or len(text) <= limit:
        return text
    return (f"{text[:limit]}\n{TRUNCATED} showing {limit} of {len(text)} characters; the rest was omitted and "
            f"is not shown to you. Do not guess what it said.{(' ' + hint) if hint else ''}")


def cut_tool_results(history: Messages, limit: Optional[int]) -> Messages:
    """τ²: every tool-role message's content cut by `cut_observation`."""
    if not limit:
        return history
    return [{**m, "content": cut_observation(str(m.get("content") or ""), limit)} if m.get("role") == "tool" else m
            for m in history]


# --- providers ------------------------------------------------------------------------------------------
def provider_of(model: str) -> str:
    import litellm

    try:
        return str(litellm.get_llm_provider(model)[1])
    except Exception:
        return ""


def is_anthropic(model: str) -> bool:
    """LiteLLM hoists every system message into Anthropic's one system block, and Anthropic caches only
    what is marked with cache_control. Claude on Bedrock / Vertex goes through the same transformation."""
    return provider_of(model) == "anthropic" or "claude" in model.lower()


def trailing_role(model: str) -> str:
    """Role of a block placed at the end of the conversation: a trailing system message would silently
    join Anthropic's system block (the start of the prompt), so there it is sent as a user message."""
    return "user" if is_anthropic(model) else "system"


def cache_marks(messages: Messages, placement: str, model: str, enabled: bool = True) -> Messages:
    """Mark the end of the stable prefix with cache_control where the provider caches only marked prefixes
    (Anthropic): the system message, or the first user message when memory lives there. Others: unchanged."""
    if not enabled or not is_anthropic(model):
        return messages
    if placement == "first_user_message":
        at = next((i for i, m in enumerate(messages) if m.get("role") == "user"), 0)
    else:
        at = next((i for i, m in enumerate(messages) if m.get("role") == "system"), 0)
    return [{**m, "cache_control": dict(CACHE_MARK)} if i == at else m for i, m in enumerate(messages)]


def request_tokens(model: str, messages: Messages, tools: Optional[list[dict[str, Any]]] = None) -> int:
    import litellm

    return int(litellm.token_counter(model=model, messages=messages, tools=tools or None))


def context_limit(model: str, *, context_window: Optional[int] = None, n_ctx: Optional[int] = None,
                  max_tokens: Optional[int] = None) -> Optional[int]:
    """Prompt tokens the assembly aims to stay under, or None when the window is unknown.

    The window is `model.context_window` if given, else the local server's `n_ctx`, else LiteLLM's
    `max_input_tokens` for the model. For the first two the reply shares the window, so `max_tokens` is
    reserved; SAFETY leaves room for the tokenizer approximation.
    """
    window = context_window or n_ctx
    reserve = int(max_tokens or 0) if window else 0
    if not window:
        import litellm

        try:
            window = litellm.get_model_info(model).get("max_input_tokens")
        except Exception:
            window = None
    if not window:
        return None
    return max(1, int(window * SAFETY) - reserve)


# --- the code-made summary -----------------------------------------------------------------------------
def clip(text: Any, limit: int) -> str:
    text = " ".join(str(text or "").split())
    return text if len(text) <= limit else f"{text[:limit]}... (cut)"


def _call_text(call: dict[str, Any]) -> tuple[str, str]:
    fn = call.get("function", call)
    args = fn.get("arguments", {})
    if not isinstance(args, str):
        args = json.dumps(args, ensure_ascii=False)
    return fn.get("name", "?"), args


def summarise(messages: Sequence[dict[str, Any]], result_chars: int = SUMMARY_RESULT_CHARS,
              text_chars: int = SUMMARY_TEXT_CHARS) -> str:
    """One line per message, made by code (no model): what the user said, what the agent said, which tools
    it called with which arguments, and the first `result_chars` characters of each result."""
    lines, names = [], {}
    for m in messages:
        role = m.get("role")
        if role == "assistant" and m.get("tool_calls"):
            if (m.get("content") or "").strip():
                lines.append(f"- You said: {clip(m['content'], text_chars)}")
            for call in m["tool_calls"]:
                name, args = _call_text(call)
                names[call.get("id", "")] = name
                lines.append(f"- You called {name}({clip(args, text_chars)})")
        elif role == "tool":
            name = names.get(m.get("tool_call_id", ""), "tool")
            lines.append(f"  - {name} returned: {clip(m.get('content'), result_chars)}")
        elif role == "user":
            lines.append(f"- The user said: {clip(m.get('content'), text_chars)}")
        elif role == "assistant":
            lines.append(f"- You said: {clip(m.get('content'), text_chars)}")
    return "\n".join(lines)


def summary_message(units: Sequence[Messages], keep_lines: Optional[int] = None,
                    summariser: Callable[[Sequence[dict[str, Any]]], str] = summarise) -> dict[str, Any]:
    """The folded turns as one user message; keep_lines: only the summary's newest lines (the last resort)."""
    n = len(units)
    head = (f"[{n} earlier turn{'s' if n != 1 else ''} summarised by the harness to fit the context window. "
            f"The summary is made by code, not by a model; tool results are cut to their first "
            f"{SUMMARY_RESULT_CHARS} characters and the rest is not shown: do not guess it.]")
    lines = summariser([m for u in units for m in u]).split("\n")
    if keep_lines is not None and keep_lines < len(lines):
        cut = len(lines) - keep_lines
        lines = [f"[the oldest {cut} lines of this summary were dropped to fit the context window]", *lines[cut:]]
    return {"role": "user", "content": head + "\n" + "\n".join(lines)}


# --- turns -------------------------------------------------------------------------------------------
def split_units(history: Messages) -> tuple[Messages, list[Messages], int]:
    """(head, units, latest) where head runs through the first user message, units are the rest grouped so
    that an assistant message keeps its tool results, and units[latest] starts the latest user message
    (-1 when the first user message is the latest: every unit then belongs to the current turn)."""
    first = next((i for i, m in enumerate(history) if m.get("role") == "user"), len(history) - 1)
    head, units = history[: first + 1], []
    for m in history[first + 1:]:
        if m.get("role") == "tool" and units:
            units[-1].append(m)
        else:
            units.append([m])
    latest = max((i for i, u in enumerate(units) if u[0].get("role") == "user"), default=-1)
    return head, units, latest


# --- placement ----------------------------------------------------------------------------------------
def place(system: str, history: Messages, memory: str, placement: str, model: str) -> Messages:
    """[system, *history] with the memory block where `placement` says."""
    if placement not in PLACEMENTS:
        raise ValueError(f"placement {placement!r}; valid: {', '.join(PLACEMENTS)}")
    if memory and placement == "after_policy":
        system = f"{system}\n{memory}"
    messages = [{"role": "system", "content": system}, *history]
    if not memory or placement == "after_policy":
        return messages
    if placement == "first_user_message":
        at = next((i for i, m in enumerate(messages) if m.get("role") == "user"), None)
        if at is None:  # no user message yet: the block opens the conversation
            return [messages[0], {"role": "user", "content": memory}, *messages[1:]]
        first = messages[at]
        return [*messages[:at], {**first, "content": f"{memory}\n\n{first.get('content') or ''}"}, *messages[at + 1:]]
    return [*messages, {"role": trailing_role(model), "content": memory}]


@dataclass(frozen=True)
class Layout:
    """A benchmark's conversation as the context policy sees it. τ²'s (the default) is `place`, `split_units`
    and `summarise`; AppWorld's code agent has its own (harness/benchmarks/appworld_agent.py)."""

    place: Callable[[str, Messages, str], Messages]  # (system, history, memory text) -> the request
    split: Callable[[Messages], tuple[Messages, list[Messages], int]] = split_units  # see split_units
    summarise: Callable[[Sequence[dict[str, Any]]], str] = summarise  # folded messages -> summary lines


@dataclass(frozen=True)
class Assembled:
    messages: Messages
    delivery: Delivery  # the memory that reached the model
    summarised_turns: int = 0  # conversation units folded into the code-made summary
    context_dropped: tuple[str, ...] = ()  # memory ids dropped by the context policy (not the strategy's budget)


def assemble(system: str, history: Messages, delivery: Delivery, *, placement: str, model: str,
             policy: str = "fail", limit: Optional[int] = None, measure: Optional[Measure] = None,
             strict_limit: bool = False, layout: Optional[Layout] = None) -> Assembled:
    """The request for one step. `measure(messages)` counts the request as it will be sent (tools included);
    `limit` is the prompt budget (see `context_limit`); `layout`: the benchmark's, τ²'s when None.

    policy "fail": the request goes as it is (the provider reports an overflow), except that a known
    `strict_limit` (model.context_window set by the user) is enforced here with ContextOverflow.
    policy "priority_drop": drop blocks in the order of the module doc until it fits, else ContextOverflow.
    """
    if policy not in CONTEXT_POLICIES:
        raise ValueError(f"context_policy {policy!r}; valid: {', '.join(CONTEXT_POLICIES)}")
    layout = layout or Layout(lambda s, h, m: place(s, h, m, placement, model))
    full = layout.place(system, history, delivery.text)
    if limit is None or measure is None:
        return Assembled(full, delivery)
    size = measure(full)
    if size <= limit:
        return Assembled(full, delivery)
    if policy == "fail":
        if strict_limit:
            raise ContextOverflow(f"request of ~{size} tokens over the limit {limit} (model.context_window)")
        return Assembled(full, delivery)
    head, units, latest = layout.split(history)
    # oldest first; never the latest user message nor the newest unit (the tool round the agent must read)
    foldable = [i for i in range(len(units)) if i not in (latest, len(units) - 1)]

    def build(k: int, memory: Delivery, keep_lines: Optional[int] = None) -> Messages:
        """The request with the `k` oldest foldable units summarised (a summary each side of the latest
        user message, so the conversation still reads in order)."""
        gone = set(foldable[:k])
        early = [units[i] for i in sorted(gone) if i < latest]
        late = [units[i] for i in sorted(gone) if i > latest]
        def folded(part: list[Messages]) -> dict[str, Any]:
            return summary_message(part, keep_lines, layout.summarise)

        kept: Messages = [folded(early)] if early else []
        if late and latest < 0:  # one turn so far: its summary follows the (first and latest) user message
            kept.append(folded(late))
        for i, unit in enumerate(units):
            if i not in gone:
                kept += unit
            if i == latest and late:
                kept.append(folded(late))
        return layout.place(system, [*head, *kept], memory.text)

    def fewest(memory: Delivery) -> Optional[int]:
        """Fewest units folded that fit; None if even all of them do not."""
        lo, hi = 0, len(foldable)
        if measure(build(hi, memory)) > limit:
            return None
        while lo < hi:
            mid = (lo + hi) // 2
            lo, hi = (lo, mid) if measure(build(mid, memory)) <= limit else (mid + 1, hi)
        return lo

    # 1. the oldest turns, folded into the code-made summary
    folded = fewest(delivery)
    if folded is not None:
        return Assembled(build(folded, delivery), delivery, folded)
    # 2. memory, lowest priority first (with every foldable turn folded)
    everything = len(foldable)
    memory = _shrink(delivery, lambda d: measure(build(everything, d)), limit)
    dropped = tuple(i for i in delivery.ids if i not in set(memory.ids))
    request = build(everything, memory)
    if measure(request) <= limit:
        return Assembled(request, memory, everything, dropped)
    # 3. the summary's oldest lines (it grows with every folded turn): keep as many of the newest as fit
    lo, hi = 0, SUMMARY_MAX_LINES
    if everything and measure(build(everything, memory, 0)) <= limit:
        while lo < hi:
            mid = (lo + hi + 1) // 2
            lo, hi = (mid, hi) if measure(build(everything, memory, mid)) <= limit else (lo, mid - 1)
        return Assembled(build(everything, memory, lo), memory, everything, dropped)
    request = build(everything, memory, 0)
    raise ContextOverflow(f"request does not fit {limit} tokens even with {everything} turns summarised and "
                          f"{len(dropped)} memory items dropped: instructions, policy and the latest messages "
                          f"alone are ~{measure(request)} tokens")


def _shrink(delivery: Delivery, size: Callable[[Delivery], int], limit: int) -> Delivery:
    """The delivery refitted, by its own priorities, until the request fits (or the memory is gone)."""
    if delivery.empty:
        return delivery
    gone = Delivery((), "", dropped=tuple(dict.fromkeys([*delivery.dropped, *delivery.ids])))
    if delivery.refit is None:  # a plugin's plain Delivery: all or nothing, and the request says so
        note = Delivery((), f"(The memory block, {len(delivery.ids)} items, was omitted to fit the context window.)",
                        dropped=gone.dropped)
        return note if size(note) <= limit else gone
    without = size(gone)
    if without > limit:
        return gone
    budget = limit - without  # tokens the block may take, roughly; refit counts the block alone
    for _ in range(8):  # the request's count is not the block's: tighten until the whole request fits
        smaller = delivery.refit(max(1, budget))
        if smaller.empty:
            return replace(gone, dropped=smaller.dropped or gone.dropped)
        over = size(smaller) - limit
        if over <= 0:
            return smaller
        budget -= max(over, 1)
    return gone


# --- two-stage answer -----------------------------------------------------------------------------------
def turn_has_tool_calls(history: Messages) -> bool:
    """Whether the agent called a tool since the latest user message."""
    latest = max((i for i, m in enumerate(history) if m.get("role") == "user"), default=-1)
    return any(m.get("role") == "assistant" and m.get("tool_calls") for m in history[latest + 1:])


def rebuild_request(system: str, history: Messages, memory: str, *, placement: str, model: str,
                    max_chars: Optional[int] = None) -> Messages:
    """A clean request for the reply to the user (seed 002's answer stage): the same system message,
    a code-made summary of the conversation before the latest user message, the raw facts this turn's
    tool calls returned (each cut by `cut_observation`), and the user's latest message. No tool
    messages, no tool calls, no tool schemas."""
    latest = max((i for i, m in enumerate(history) if m.get("role") == "user"), default=-1)
    before, question, turn = history[:max(latest, 0)], history[latest] if latest >= 0 else None, history[latest + 1:]
    names, facts = {}, []
    for m in turn:
        if m.get("role") == "assistant":
            for call in m.get("tool_calls") or []:
                names[call.get("id", "")] = _call_text(call)
        elif m.get("role") == "tool":
            name, args = names.get(m.get("tool_call_id", ""), ("tool", ""))
            facts.append(f"{name}({args}) returned:\n{cut_observation(str(m.get('content') or ''), max_chars)}")
    parts = []
    if before:
        parts.append("The conversation so far (summary made by code):\n" + summarise(before))
    parts.append("What your tool calls in this turn returned (raw):\n\n" + ("\n\n".join(facts) or "(nothing)"))
    parts.append("The user's latest message:\n" + str((question or {}).get("content") or ""))
    parts.append("Write your reply to the user now, using these facts. Reply with the message only.")
    return place(system, [{"role": "user", "content": "\n\n".join(parts)}], memory, placement, model)


def variant_suffix(benchmark: Any, default_placement: str) -> str:
    """The part of a job key that tells apart jobs of an assembly sweep (empty for the defaults, so
    existing run directories keep their keys)."""
    parts = []
    placement = getattr(benchmark, "placement", default_placement)
    if placement != default_placement:
        parts.append(f"placement={placement}")
    for key, default in DEFAULTS.items():
        value = getattr(benchmark, key, default)
        if value != default:
            parts.append(f"{key}={value}")
    return ("@" + ",".join(parts)) if parts else ""


@dataclass(frozen=True)
class AssemblyOptions:
    """The request-assembly settings of one job (benchmark.* and model.* keys, see options_for)."""

    placement: str = "after_policy"
    context_policy: str = "fail"
    answer_mode: str = "plain"
    limit: Optional[int] = None  # prompt tokens to stay under (None: unknown window)
    strict_limit: bool = False  # the user set model.context_window: enforce it even with policy "fail"
    max_observation_chars: Optional[int] = None
    prompt_caching: bool = True


def options_for(benchmark: Any, model: Any) -> AssemblyOptions:
    """From the job's benchmark and model configs. The window is looked up only when something uses it."""
    window = getattr(model, "context_window", None)
    limit = None
    if benchmark.context_policy == "priority_drop" or window:
        kwargs = dict(getattr(model, "kwargs", None) or {})
        limit = context_limit(model.name, context_window=window,
                              n_ctx=getattr(model, "n_ctx", None) if getattr(model, "gguf", None) else None,
                              max_tokens=kwargs.get("max_tokens"))
    return AssemblyOptions(placement=benchmark.placement, context_policy=benchmark.context_policy,
                           answer_mode=benchmark.answer_mode, limit=limit, strict_limit=bool(window),
                           max_observation_chars=benchmark.get("max_observation_chars")
                           if hasattr(benchmark, "get") else getattr(benchmark, "max_observation_chars", None),
                           prompt_caching=bool(getattr(model, "prompt_caching", True)))
