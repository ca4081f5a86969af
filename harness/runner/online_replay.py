"""Resuming an online learner: no update lost between a record and the update it feeds.

The runner applies an episode's update (with `trajectory.episode` set to the episode's key) and commits the
stream with the keys it applied (harness/runner/stream_state.py) before it writes the episode's record. On
resume, every recorded episode whose update is not committed (an update skipped because its provider was down,
or a run written before its learner kept its stream with the run) is replayed from its stored trajectory
(`learn` with no rerun or gold), in record order, before new episodes run. A learner that keeps no stream as
data is left as it is.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path
from typing import Iterable, Optional

from harness.benchmarks import Benchmark
from harness.errors import INFRA
from harness.row import Row
from harness.runner.reflect_and_retry import shown
from harness.runner.stream_state import StreamStates
from strategies import Strategy
from memory_kit.role_client import RoleCallFailed


def episode_key(task_id: str, trial: int) -> str:
    return f"{task_id}#{trial}"


def reapply_online_updates(strategy: Strategy, bench: Benchmark, run_dir: Path, records: Iterable[Row],
                           ground_truth: bool = False, states: Optional[StreamStates] = None) -> int:
    """Replays go to the episode's own stream (its key carries the trial), with labels only when allowed; a
    learner whose streams are committed with the run (`states`) commits each replayed update too."""
    applied = states.applied() if states is not None else None
    if applied is None:
        return 0
    pending = [r for r in records if r.get("error") != INFRA and r.get("trajectory")
               and episode_key(r["task_id"], r["trial"]) not in applied]
    for record in pending:  # file order: the order the updates were due
        trajectory = bench.load_trajectory(run_dir / record["trajectory"], record)
        if trajectory is None:  # a benchmark that cannot read its trajectories back (BenchmarkBase's default)
            return 0
        episode = replace(trajectory, episode=episode_key(record["task_id"], record["trial"]))
        try:
            strategy.learn(shown(episode, ground_truth))
        except RoleCallFailed as exc:  # lost again: recorded as applied (lost), as a live update would be
            print(f"memdeliv: replayed online update lost: {exc}", file=sys.stderr)
        if states is not None and episode.episode is not None:
            states.commit(record["trial"], episode.episode)
    if pending:
        print(f"memdeliv: re-applied {len(pending)} online update(s) lost by an interrupted run", file=sys.stderr)
    return len(pending)
