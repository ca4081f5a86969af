"""Scripts for the scripted models on τ² (harness/scripted/oracle.py, simulated.py): the task's gold actions
and facts to say, and, for the simulated agent, which gold write to leave out. Test and self-check machinery,
kept out of the τ² adapter, which hands a script to the model only when the model is scripted."""

from __future__ import annotations

import hashlib
import threading
from typing import TYPE_CHECKING, Any, Optional, Protocol

if TYPE_CHECKING:
    from tau2.data_model.tasks import Task

    from harness.benchmarks.tau2.data import TaskSource
    from harness.settings import BenchmarkSettings

class Tau2Bench(Protocol):
    """What the scripts read of a Tau2Benchmark (harness/benchmarks/tau2/adapter.py, which imports this module)."""

    domain: str
    settings: BenchmarkSettings
    source: TaskSource

    @property
    def tool_types(self) -> dict[str, str]: ...


# drop_position per (domain, data, task content): replaying gold actions costs ~0.4 s a task, and every job of a
# sweep (one process) asks again for the same tasks
_DROPS: dict[tuple[str, str, str], Optional[int]] = {}
_DROPS_LOCK = threading.Lock()


def oracle_script(bench: "Tau2Bench", task: Task, find_drop: bool = False) -> dict[str, Any]:
    """Gold actions and facts to say, for the scripted models (oracle self-check, simulated world), of `task`
    in `bench` (a Tau2Benchmark).

    find_drop (the simulated agent): `drop` = the position of the last gold call whose omission changes
    tau2's DB check (some gold writes fail and change nothing), None when there is none."""
    crit = task.evaluation_criteria
    calls = [{"name": a.name, "arguments": a.arguments, "write": bench.tool_types.get(a.name) == "write",
              "read": bench.tool_types.get(a.name) == "read"}
             for a in (crit.actions or []) if a.requestor == "assistant"]
    info = " ".join(str(x) for x in (crit.communicate_info or []))
    # The oracle's user names only the task id (a self-check needs no more); the simulated world's user states
    # the request, as a user simulator who knows its scenario does, so retrieval has something to match.
    opening = (request_of(task) if find_drop else "") or f"Hi, I need help with a request (task {task.id})."
    script = {"task_id": task.id, "gold_calls": calls, "final_message": info or "Your request has been handled.",
              "communicate": bool(info), "opening": opening}
    if find_drop:
        script["drop"] = drop_position(bench, task)
    return script


def request_of(task: Task) -> str:
    """The task's request as its user would state it (the scenario's reason for calling)."""
    instr = getattr(task.user_scenario, "instructions", None)
    return str(getattr(instr, "reason_for_call", None) or "").strip()


def drop_position(bench: "Tau2Bench", task: Task) -> Optional[int]:
    """Replays the gold actions as tau2's DB check does, leaving out one assistant write at a time (last first)."""
    key = (bench.domain, str(bench.settings.data_dir or "packaged"),
           hashlib.sha256(task.model_dump_json().encode()).hexdigest())
    with _DROPS_LOCK:
        if key in _DROPS:
            return _DROPS[key]
    actions = task.evaluation_criteria.actions or []
    init = task.initial_state

    def db_hash(skip: Optional[int]) -> str:
        env = bench.source.environment()
        env.set_state(initialization_data=init.initialization_data if init else None,
                      initialization_actions=init.initialization_actions if init else None,
                      message_history=(init.message_history or []) if init else [])
        for i, a in enumerate(actions):
            if i != skip:
                try:
                    env.make_tool_call(tool_name=a.name, requestor=a.requestor, **a.arguments)
                except Exception:  # tau2's own replay ignores a failing gold action too
                    pass
        return env.get_db_hash()

    assistant = [i for i, a in enumerate(actions) if a.requestor == "assistant"]
    found, full = None, None
    for pos in reversed(range(len(assistant))):
        if bench.tool_types.get(actions[assistant[pos]].name) != "write":
            continue
        full = full or db_hash(None)
        if db_hash(assistant[pos]) != full:
            found = pos
            break
    with _DROPS_LOCK:
        _DROPS[key] = found
    return found
