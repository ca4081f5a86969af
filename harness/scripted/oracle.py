"""`memdeliv-scripted/oracle`: a SCRIPTED model (not a language model) served through LiteLLM.

The benchmark adapter hands it a script through LiteLLM metadata; it plays both sides:
- agent: replays `gold_calls` one tool call per step, then sends `final_message`
  (with metadata `sabotage_rate` it drops the last gold call on a deterministic share of task x seed;
  with `sabotage_unless` as well, only while that text is absent from its system prompt: a scripted
  agent that fails until, e.g., an ACE reflection is in its context);
  or, for code agents (AppWorld), answers step i with `code_steps[i]` in a python code block;
- user:  opens with `opening`, answers "go ahead" until the agent's final message, then stops.
Usage is counted with LiteLLM's tokenizer on the real prompt, so memory still costs tokens.
Going through `litellm.completion` keeps the whole client path (retries, ledger) under test.
"""

from __future__ import annotations

import hashlib
import json
import time
from typing import Any

import litellm
from litellm import CustomLLM, ModelResponse

from harness.scripted.token_count import prompt_tokens
from harness.serving.providers import Provider, register_provider

PROVIDER = "memdeliv-scripted"
DONE_MARKER = "[scripted agent: done]"
STOP = "###STOP###"


class ScriptedOracle(CustomLLM):
    def completion(self, model: str, messages: list[dict[str, Any]], *args: Any, **kwargs: Any) -> ModelResponse:
        meta = (kwargs.get("litellm_params") or {}).get("metadata") or {}
        script = meta.get("script")
        if not script:
            raise litellm.exceptions.BadRequestError(
                message="scripted oracle needs a script in metadata (set scripted: true in the model config)",
                model=model, llm_provider=PROVIDER)
        if meta.get("latency_s"):
            time.sleep(float(meta["latency_s"]))
        if meta.get("role") == "user":
            message = {"role": "assistant", "content": _user_turn(messages, script)}
        else:
            seed = (kwargs.get("optional_params") or {}).get("seed")
            sabotaged = _sabotaged(script, seed, float(meta.get("sabotage_rate", 0)))
            if sabotaged and meta.get("sabotage_unless"):
                sabotaged = not any(meta["sabotage_unless"] in str(m.get("content") or "")
                                    for m in messages if m.get("role") == "system")
            message = _agent_turn(messages, script, sabotaged)
        completion_text = message.get("content") or json.dumps(message.get("tool_calls"))
        prompt = prompt_tokens("gpt-4o", _countable(messages))  # litellm.token_counter's figure, kept per message
        out = litellm.token_counter(model="gpt-4o", text=completion_text)
        return ModelResponse(
            model=f"{PROVIDER}/{model}",
            choices=[{"message": message, "finish_reason": "tool_calls" if message.get("tool_calls") else "stop"}],
            usage={"prompt_tokens": prompt, "completion_tokens": out, "total_tokens": prompt + out},
        )


def _sabotaged(script: dict[str, Any], seed: object, rate: float) -> bool:
    """Deterministic per (task, trial seed): lets tests get a known mix of passes and failures."""
    if rate <= 0:
        return False
    digest = hashlib.sha256(f"{json.dumps(script, sort_keys=True)}|{seed}".encode()).digest()
    return int.from_bytes(digest[:4], "big") / 2**32 < rate


def _agent_turn(messages: list[dict[str, Any]], script: dict[str, Any], sabotaged: bool = False) -> dict[str, Any]:
    if "code_steps" in script:
        return _code_turn(messages, script["code_steps"])
    done = sum(len(m.get("tool_calls") or []) for m in messages if m.get("role") == "assistant")
    calls = script.get("gold_calls", [])
    if sabotaged:  # skip the last write: the episode ends normally but the DB check fails
        calls = calls[:-1]
    if done < len(calls):
        return gold_call_message(calls[done], done)
    return {"role": "assistant", "content": f"{script.get('final_message', '').strip()} {DONE_MARKER}".strip()}


def gold_call_message(call: dict[str, Any], index: int) -> dict[str, Any]:
    """The assistant message that makes one scripted gold tool call."""
    return {"role": "assistant", "content": None, "tool_calls": [{
        "id": f"call_{index}", "type": "function",
        "function": {"name": call["name"], "arguments": json.dumps(call["arguments"])},
    }]}


def _code_turn(messages: list[dict[str, Any]], steps: list[str]) -> dict[str, Any]:
    done = sum(1 for m in messages if m.get("role") == "assistant")
    if done < len(steps):
        return {"role": "assistant", "content": f"```python\n{steps[done]}\n```"}
    return {"role": "assistant", "content": DONE_MARKER}


def _user_turn(messages: list[dict[str, Any]], script: dict[str, Any]) -> str:
    # The user simulator sees roles flipped: the agent's words arrive as "user" messages.
    spoken = [m for m in messages if m.get("role") == "assistant"]
    if not spoken:
        return script.get("opening", "Hi, I need help with a request.")
    last_agent = next((m.get("content") or "" for m in reversed(messages) if m.get("role") == "user"), "")
    return STOP if DONE_MARKER in last_agent else "Yes, please go ahead."


def _countable(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"role": m.get("role", "user"), "content": m.get("content") or json.dumps(m.get("tool_calls") or "")}
            for m in messages]


def install() -> None:
    """Register the provider with LiteLLM (idempotent)."""
    register_provider(PROVIDER, ScriptedOracle(), replace=False)


SERVED = Provider(PROVIDER, install)  # its entry point (pyproject.toml, memdeliv.providers)
