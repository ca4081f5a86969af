"""Stop a job whose provider cannot be reached, instead of recording an hour of retries as a table of zeros.

An episode whose call never connected on any attempt (connection refused, DNS failure, a timeout while
connecting; harness/serving/provider_errors.py) ends as `infra` and its `Outcome` names the endpoint. When the
first FIRST episodes of a launch (or all of them, when it runs fewer) all end so, the job stops with that endpoint
named. Their rows are written first: nothing recorded is lost, and a rerun runs them again (retry_infra). Once one
episode of the launch has ended otherwise, a later outage is recorded as infra, as before.
"""

from __future__ import annotations

from typing import Optional

from harness.records import Outcome

FIRST = 3  # the first episodes of a launch that decide (each after the model's usual retries)


class Reachability:
    def __init__(self, episodes: int, model: str, retries: int, first: int = FIRST):
        self.needed = min(first, episodes)
        self.model, self.retries = model, retries
        self.endpoints: list[str] = []
        self.decided = self.needed == 0

    def see(self, outcome: Outcome) -> Optional[str]:
        """The reason to stop, once the first episodes all failed to connect; None otherwise."""
        if self.decided or outcome.row is None:
            return None
        if outcome.unreachable is None:
            self.decided = True  # the provider answered (or the episode ended otherwise): no stop for this launch
            return None
        self.endpoints.append(outcome.unreachable)
        if len(self.endpoints) < self.needed:
            return None
        self.decided = True
        where = ", ".join(dict.fromkeys(self.endpoints))
        which = "the first episode" if self.needed == 1 else f"each of the first {self.needed} episodes"
        return (f"{self.model}: cannot reach {where}: {which} ended in connection errors (connection refused, DNS "
                f"failure or a connect timeout; each call tried {self.retries + 1} times); check "
                "model.kwargs.api_base, the network and any proxy")
