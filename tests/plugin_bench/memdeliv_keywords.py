"""A third benchmark as an outside plugin (tests/test_plugin_benchmark.py): no harness code knows it.

Installed, a package declares it as pip would (see memdeliv_keywords-0.1.dist-info/entry_points.txt):

    [memdeliv.benchmarks]
    keywords = memdeliv_keywords:KeywordBenchmark

Here `PYTHONPATH=tests/plugin_bench` stands in for `pip install`. Each task names a keyword; the scripted
"agent" takes one step: it asks the strategy for memory, and the task succeeds when the delivered memory
mentions the keyword (the sample memory, strategies/samples/tau2_sample.jsonl, mentions three of four).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from harness.benchmarks import BenchmarkBase
from harness.benchmarks.episode import EpisodeFrame
from harness.errors import call_strategy
from harness.records import EpisodeRecord
from harness.serving.model_client import Usage
from strategies import StepView, TaskView, Trajectory

TASKS = {
    "train": {"t1": "authenticate", "t2": "gift card"},
    "test": {"k1": "authenticate", "k2": "refund", "k3": "one tool call", "k4": "zebra"},
}
FORMAT = "memdeliv-keywords/1"


@dataclass(frozen=True)
class KeywordTask:
    id: str
    keyword: str


class KeywordBenchmark(BenchmarkBase):
    """Placements and every optional capability come from BenchmarkBase's defaults, except load_trajectory."""

    def validate(self) -> None:
        if self.settings.split not in TASKS:
            raise ValueError(f"{self.name}: unknown split {self.settings.split!r}; valid: {', '.join(TASKS)}")
        unknown = [str(t) for t in self.settings.task_ids or () if str(t) not in TASKS[self.settings.split]]
        if unknown:
            raise ValueError(f"{self.name}/{self.settings.split}: unknown task ids {unknown}")

    def tasks(self) -> list[KeywordTask]:
        tasks = [KeywordTask(i, k) for i, k in TASKS[self.settings.split].items()]
        if self.settings.task_ids:
            tasks = [t for t in tasks if t.id in {str(i) for i in self.settings.task_ids}]
        return tasks[: self.settings.limit] if self.settings.limit is not None else tasks

    def run_episode(self, task: KeywordTask, *, trial: int, seed: int, strategy: Any, model: Any, counter: Any,
                    trajectory_path: Path) -> tuple[EpisodeRecord, Trajectory]:
        frame = EpisodeFrame()  # clock, ledger, error labels, trajectory file: as every benchmark has them
        view = TaskView(benchmark=self.name, task_id=task.id, description=f"Recall what you know about {task.keyword}.")
        messages = ({"role": "user", "content": view.description},)
        text = ""
        try:
            delivery = call_strategy(strategy, "deliver", view, StepView(index=0, messages=messages))
            text = delivery.text
            memory_tokens = counter(text) if text else 0
            usage = Usage(prompt_tokens=counter(view.description) + memory_tokens, completion_tokens=0,
                          cached_tokens=0, cost_usd=0.0, latency_s=0.0)
            frame.ledger.add_agent_step(usage, memory_tokens, delivery.ids, dropped_ids=delivery.dropped)
        except Exception as exc:  # labelled like every benchmark's: strategy, infra, harness
            frame.fail(exc)
        success = frame.error is None and task.keyword in text.lower()
        messages += ({"role": "assistant", "content": text or "(no memory)"},)
        feedback = f"keyword {task.keyword!r} {'found' if success else 'not found'} in the delivered memory"
        frame.write(trajectory_path, json.dumps({"format": FORMAT, "task_id": task.id, "messages": list(messages),
                                                 "feedback": feedback}, indent=1))
        trajectory = Trajectory(task=view, messages=messages, reward=float(success), success=success,
                                feedback=feedback)
        return frame.finish(task.id, success=success, reward=float(success),
                            termination="completed" if frame.error is None else frame.error,
                            task_text=view.description, trajectory=trajectory)

    def load_trajectory(self, path: Path, record: dict[str, Any]) -> Optional[Trajectory]:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
        messages = tuple(doc["messages"])
        view = TaskView(benchmark=self.name, task_id=doc["task_id"], description=messages[0]["content"])
        return Trajectory(task=view, messages=messages, reward=float(record["reward"]),
                          success=bool(record["success"]), feedback=doc["feedback"])

