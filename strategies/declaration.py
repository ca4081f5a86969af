"""What the harness asks of a strategy before building it, declared once on its class as data (`declaration`):
its typed options, whether it reads `memory=`, whether (so configured) it learns online and from labels, its
trial streams, its frame, whose memory it reads, what `make plan` prices, and which artifacts it can start from.
Every question about a configuration takes the strategy's typed options (strategies/options.py), so nothing
reads an option twice or by hand."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Callable, Mapping, Optional

from strategies import options as typed
from strategies.frame import Frame, chosen

Count = Callable[[str], int]  # the run model's token counter
Estimate = Any  # strategies.plan_block.PlanEstimate, or None (plan_block renders with the protocol's types)


def never(opts: Any) -> bool:
    return False


def always(opts: Any) -> bool:
    return True


def own_memory(opts: Any) -> Optional[str]:
    return None


def no_estimate(memory: Optional[str], count: Count, opts: Any) -> Estimate:
    return None  # the plan counts every guideline of the artifact, an upper bound (plan_block.full_block)


def any_memory(path: Optional[str]) -> None:
    return None


@dataclass(frozen=True)
class Declaration:
    """A strategy's declaration. `options`: its frozen options dataclass (`gather`: the field that takes every
    other name, for an arm that passes them on); `uses_memory`: False when it ignores `memory=` (its rows carry no
    provenance label); `online(opts)`: it learns after every episode; `trial_streams`: each trial its own
    stream, all starting from the same memory; `ground_truth(opts)`: it learns from labels (withheld otherwise);
    `memory_entry_only`: it reads its own `memory_by_strategy` entry only, never `memory=` (an online learner
    that starts empty unless handed its train artifact: registry.job_memory);
    `frame`: its block's tag, header and instruction, and `framed(opts)` the one it delivers so configured
    (default: `frame`, neutral under `frame: neutral`); `memory_of(opts)`: whose memory_by_strategy entry it
    reads (None: its own); `plan(memory, count, opts)`: what `make plan` prices (strategies/plan_block.py);
    `check_memory(path)`: raises ValueError for an artifact it cannot start from (exit 2 before anything runs);
    `check_entry(path)`: the same for an artifact its own `memory_by_strategy` entry names (ACE: its playbook only,
    so an experiment that gives it its own memory never hands it the guideline file the others read);
    `labelled_by_default`: whether its memory is, by default, learned from labels (ACE's offline playbook: yes, as
    the paper's; ace_online: no). A row whose `memory_ground_truth` departs from it is named `<design> (GT)` or
    `<design> (no GT)` in every table (analysis/runs/load.py), so the two never share a row; None: never named."""

    options: type = typed.NoOptions
    gather: str = ""
    uses_memory: bool = True
    memory_entry_only: bool = False
    online: Callable[[Any], bool] = never
    trial_streams: bool = False
    ground_truth: Callable[[Any], bool] = never
    frame: Optional[Frame] = None
    framed: Optional[Callable[[Any], Optional[Frame]]] = None
    memory_of: Callable[[Any], Optional[str]] = own_memory
    plan: Callable[[Optional[str], Count, Any], Estimate] = no_estimate
    check_memory: Callable[[Optional[str]], None] = any_memory
    check_entry: Callable[[Optional[str]], None] = any_memory
    labelled_by_default: Optional[bool] = None

    def parse(self, strategy: str, given: Mapping[str, Any]) -> Any:
        """The typed options (ValueError for any mistake: unknown name, type, bound, rule)."""
        return typed.parse(strategy, self.options, given, self.gather)

    def names(self) -> Optional[tuple[str, ...]]:
        """The option names it takes; None when it takes any (`gather`: what it does not declare is passed on)."""
        return None if self.gather else typed.names(self.options)

    def delivered_frame(self, opts: Any) -> Optional[Frame]:
        if self.framed is not None:
            return self.framed(opts)
        return None if self.frame is None else chosen(self.frame, frame_choice(opts))


def frame_choice(opts: Any) -> str:
    """The `frame` option of typed options that have one ("own" otherwise)."""
    return next((str(getattr(opts, f.name)) for f in fields(opts) if f.name == "frame"), "own")
