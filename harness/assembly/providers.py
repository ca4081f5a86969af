"""What differs by provider: the role of a trailing block, prompt-cache marks, token counts and the window.

LiteLLM is imported inside the functions: importing the assembly package stays cheap.
"""

from __future__ import annotations

from typing import Any, Optional

Messages = list[dict[str, Any]]

SAFETY = 0.9  # fraction of the window the assembly aims for: token counts are tokenizer approximations
CACHE_MARK = {"type": "ephemeral"}


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

    counted = litellm.token_counter(model=model, messages=messages,
                                    tools=tools or None)  # type: ignore[arg-type]  # OpenAI-format tool dicts
    return int(counted)


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
