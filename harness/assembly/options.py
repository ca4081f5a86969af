"""The request-assembly settings of a job and their valid values: the one definition.

The harness (configs, CLI checks, job keys, agents) and analysis (record defaults for old runs) read these
names from here. Standard library only, so analysis can import it without importing the runner.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

# Where a memory block may go in the request (docs/request-assembly.md). Each benchmark offers these or a
# subset (Benchmark.placements) and names its published setup's default (Benchmark.default_placement).
PLACEMENTS = ("after_policy", "first_user_message", "end_of_conversation")
DEFAULT_PLACEMENT = "after_policy"  # τ²'s (IBM's runs): in the stable, cacheable prefix
CONTEXT_POLICIES = ("fail", "priority_drop")
ANSWER_MODES = ("plain", "rebuild")
# Defaults of the settings every benchmark shares; placement's default is the benchmark's own. A job with
# these values has no suffix in its key, and records written before a setting existed read as its default.
DEFAULTS = {"context_policy": "fail", "answer_mode": "plain"}
PROMPT_CACHING = True  # model.prompt_caching: mark the stable prefix with cache_control where the provider needs it
MAX_OBSERVATION_CHARS = 20000  # benchmark.max_observation_chars: longer tool / code output is cut, with a note


def check(placement: Optional[str] = None, context_policy: Optional[str] = None,
          answer_mode: Optional[str] = None, *, placements: Sequence[str] = PLACEMENTS) -> None:
    """Raise ValueError naming the first given setting that is not valid ("benchmark.placement='x'; valid: ...")."""
    given = (("placement", placement, placements), ("context_policy", context_policy, CONTEXT_POLICIES),
             ("answer_mode", answer_mode, ANSWER_MODES))
    for key, value, valid in given:
        if value is not None and value not in valid:
            raise ValueError(f"benchmark.{key}={value!r}; valid: {', '.join(valid)}")


@dataclass(frozen=True)
class AssemblyOptions:
    """The request-assembly settings of one job (its benchmark.* and model.* keys, see job_config.options_for):
    the only way placement and the observation limit reach an agent."""

    placement: str = DEFAULT_PLACEMENT
    context_policy: str = DEFAULTS["context_policy"]
    answer_mode: str = DEFAULTS["answer_mode"]
    limit: Optional[int] = None  # prompt tokens to stay under (None: unknown window)
    strict_limit: bool = False  # the user set model.context_window: enforce it even with policy "fail"
    max_observation_chars: Optional[int] = None  # None: tool / code output is never cut
    prompt_caching: bool = PROMPT_CACHING

    def __post_init__(self) -> None:
        check(self.placement, self.context_policy, self.answer_mode)
