"""Where a memory artifact learned from, and the check that a sweep is not scored on those same tasks.

Every builder writes `_meta.learned_from` into its artifact:

    {"benchmark": "tau2_retail", "split": "train", "task_ids": ["0", "4", ...], "task_ids_sha256": "...",
     "task_set": {...tau2 fingerprint...}, "model": "openai/gpt-4.1", "ground_truth": false}

A playbook that started from another learned artifact keeps that one's `learned_from` under `started_from`,
so the tasks of the whole chain count. When memory is used, the evaluated tasks are compared with them:
an overlap stops the sweep (exit 2) unless `allow_in_sample=true`, which labels the rows IN-SAMPLE. An
artifact without `learned_from` (hand-written) is labelled `unknown provenance`. The label goes into every
record (`memory_provenance`), so the analysis reads it from the run files.
"""

from __future__ import annotations

from typing import Any, Iterable, Protocol, Sequence

from harness.settings import JobSettings


class Tasks(Protocol):
    """What the check needs of a benchmark (the Benchmark protocol's `tasks`; this layer sits below it)."""

    def tasks(self) -> Sequence[Any]: ...


IN_SAMPLE = "IN-SAMPLE"
UNKNOWN = "unknown provenance"
HELD_OUT = "held-out"  # learned from other tasks than the evaluated ones: no label in tables
TRAIN = "train"


class ProvenanceError(ValueError):
    pass


def learned_tasks(meta: dict[str, Any], benchmark: str) -> set[str] | None:
    """Task ids of `benchmark` this artifact (and any artifact it started from) learned from; None: unknown."""
    source = meta.get("learned_from")
    if not isinstance(source, dict):
        return None
    seen: set[str] = set()
    while isinstance(source, dict):
        if source.get("benchmark") == benchmark:
            seen |= {str(t) for t in source.get("task_ids") or ()}
        source = source.get("started_from")
    return seen


def check_use(meta: dict[str, Any], benchmark: str, task_ids: Iterable[Any], allow_in_sample: bool,
              memory: str = "memory", split: str | None = None) -> str:
    """The provenance label of evaluating `task_ids` of `benchmark` (on `split`) with this artifact; raises
    ProvenanceError on an overlap unless allow_in_sample, naming the artifact and how to rebuild it from train."""
    learned = learned_tasks(meta, benchmark)
    if learned is None:
        return UNKNOWN
    overlap = learned & {str(t) for t in task_ids}
    if not overlap:
        return HELD_OUT
    if not allow_in_sample:
        shown = ", ".join(sorted(overlap)[:5]) + (", ..." if len(overlap) > 5 else "")
        raise ProvenanceError(f"{memory} was learned from {len(overlap)} of the {benchmark} tasks this sweep "
                              f"evaluates ({shown}): scores on them would be in-sample. "
                              f"{_remedy(meta, benchmark, split)} or pass allow_in_sample=true to label them IN-SAMPLE")
    return IN_SAMPLE


def _remedy(meta: dict[str, Any], benchmark: str, split: str | None) -> str:
    """How to get held-out scores: rebuild the artifact from train (the command that builds its kind), or, when
    the sweep is not already on test, evaluate the test split."""
    source = meta.get("learned_from") or {}
    model = f" MODEL={source['model']}" if source.get("model") else ""
    build = (f"make ace{model} BENCH={benchmark}" if str(meta.get("kind", "")).startswith("ace") else
             f"make memory{model} BENCH={benchmark}")
    learned = f"it learned from the {source['split']} split; " if source.get("split") else ""
    other = "" if split == "test" else "evaluate other tasks (e.g. benchmark.split=test), "
    return (f"Held-out scores: {other}{learned}rebuild it from the train split ({build}, which learns from train "
            f"only) and pass the new artifact as MEMORY=")


def check_ground_truth(split: str, what: str) -> None:
    """Labels (reward, success, evaluator report, gold solution) may be learned from on the train split only."""
    if split != TRAIN:
        raise ProvenanceError(f"{what} uses ground truth, which is allowed on the train split only; refusing "
                              f"benchmark.split={split}")


def job_provenance(s: JobSettings, bench: Tasks, memory: str | None, *, uses_memory: bool, ground_truth: bool
                   ) -> str | None:
    """The label of this job's rows: None when it uses no memory artifact; raises ProvenanceError (in-sample
    without allow_in_sample, or ground truth off the train split). `memory`: the job's artifact (memory=, or
    memory_by_strategy's); `uses_memory`, `ground_truth`: what its strategy declares (the Job's capabilities).
    Called once per job, by harness/runner/job.py's resolve."""
    from memory_kit.memory_file import load_memory

    if ground_truth:
        check_ground_truth(s.benchmark.split, f"strategy {s.strategy.name!r}")
    memory = s.strategy.options.get("playbook") or memory  # ACE's own playbook option wins over memory=
    if not memory or not uses_memory:
        return None
    _, meta = load_memory(memory)
    return check_use(meta, s.benchmark.name, [t.id for t in bench.tasks()], s.allow_in_sample, memory=str(memory),
                     split=s.benchmark.split)
