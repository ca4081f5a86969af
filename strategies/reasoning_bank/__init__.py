"""`reasoning_bank`, ReasoningBank's judged and distilled memory items: strategy (the class), prompts."""

from strategies.reasoning_bank.strategy import ReasoningBank

__all__ = ["ReasoningBank"]
