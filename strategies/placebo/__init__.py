"""`placebo`, the length-matched neutral-text control: strategy (the class), placebo_text.txt (its text)."""

from strategies.placebo.strategy import Placebo

__all__ = ["Placebo"]
