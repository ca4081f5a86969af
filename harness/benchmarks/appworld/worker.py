"""AppWorld engine worker. Runs INSIDE .venv-appworld (stdlib + appworld only); never import it from .venv.

Why a separate long-lived process: AppWorld pins pydantic<2 (cannot share a venv with LiteLLM/tau2), an
open world freezes the process clock with freezegun (the harness's timers and timestamps must not
stop), the first world costs seconds while later ones cost ~0.1 s, and process exit is slow.

Why JSON lines over stdio and not `appworld serve`: one pipe pair per worker needs no port, no
server start-up race and no network exposure; the worker dies with its stdin (no orphans when the
harness is killed), and a crash is seen at once as EOF instead of a connection timeout.

Protocol: one JSON object per line on stdin {"op": ..., **args}; one reply line per request:
{"ok": true, "result": ...} or {"ok": false, "error": "...", "trace": "..."}. AppWorld's own
prints are diverted to stderr so they can never corrupt the protocol channel.

    python worker.py                          serve the protocol
    python worker.py unpack B ROOT            unpack a data bundle with AppWorld's own helper
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import traceback
from typing import Callable

_state: dict = {"world": None}


def _close_world() -> None:
    world = _state.pop("world", None)
    _state["world"] = None
    if world is not None:
        world.close()
        # the harness keeps its own trajectory; AppWorld's per-task outputs would pile up over a long run
        shutil.rmtree(world.output_directory, ignore_errors=True)


def op_hello() -> dict:
    import appworld
    from appworld.common.path_store import path_store

    return {"appworld": appworld.__version__, "root": path_store.root, "pid": os.getpid()}


def op_open(task_id: str, experiment_name: str, timeout_seconds: int, want_gold: bool = False) -> dict:
    from appworld import AppWorld

    _close_world()
    # The gold solution runs the way AppWorld's own `appworld verify tasks` runs it: API failures come
    # back as values instead of raising (some shipped solutions rely on that). Agents get the default.
    world = AppWorld(task_id=task_id, experiment_name=experiment_name, timeout_seconds=timeout_seconds,
                     raise_on_failure=not want_gold)
    _state["world"] = world
    task = world.task
    supervisor = {k: task.supervisor[k] for k in ("first_name", "last_name", "email", "phone_number")}
    metadata = task.ground_truth.metadata if task.ground_truth else {}
    return {"instruction": task.instruction, "supervisor": supervisor, "datetime": task.datetime.isoformat(),
            "difficulty": metadata.get("difficulty"), "gold_code": _gold_code(task_id) if want_gold else None}


def _gold_code(task_id: str) -> str | None:
    """The shipped solution (train/dev ship it in 'full' mode; test splits do not), as a runnable cell,
    exactly as `appworld verify tasks` builds it."""
    from appworld.ground_truth import GroundTruth

    try:
        truth = GroundTruth.load(task_id=task_id, mode="full")
    except Exception:
        return None
    code = (truth.compiled_solution_code or truth.solution_code).strip()
    return f"{code}\n\nsolution(apis, requester)" if code else None


def op_gold(task_id: str) -> dict:
    return {"gold_code": _gold_code(task_id)}


def _world():
    if _state["world"] is None:
        raise RuntimeError("no open world: send 'open' first")
    return _state["world"]


def op_execute(code: str) -> dict:
    world = _world()
    output = world.execute(code)
    return {"output": output, "completed": bool(world.task_completed())}


def op_evaluate() -> dict:
    tracker = _world().evaluate()
    return {"success": bool(tracker.success), "pass_count": tracker.pass_count, "num_tests": tracker.num_tests,
            "difficulty": tracker.difficulty, "report": tracker.report(print_it=False, colorize=False),
            "failed": [f["requirement"] for f in tracker.failures]}


def op_close() -> dict:
    _close_world()
    return {}


def op_unpack(bundle: str, root: str) -> dict:
    from appworld.common.constants import PASSWORD, SALT
    from appworld.common.utils import unpack_bundle

    unpack_bundle(bundle_file_path=bundle, base_directory=root, password=PASSWORD, salt=SALT)
    return {}


OPS: dict[str, Callable[..., dict]] = {"hello": op_hello, "open": op_open, "gold": op_gold, "execute": op_execute,
                                       "evaluate": op_evaluate, "close": op_close}


def serve() -> None:
    channel = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
    os.dup2(2, 1)  # stray prints from AppWorld land in the worker log, never in the protocol
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C belongs to the harness; we stop when stdin closes
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        op = request.pop("op", None)
        if op == "shutdown":
            break
        try:
            reply = {"ok": True, "result": OPS[op](**request)}
        except Exception as exc:
            reply = {"ok": False, "error": f"{type(exc).__name__}: {exc}", "trace": traceback.format_exc(limit=8)}
        channel.write(json.dumps(reply) + "\n")
    try:
        _close_world()
    finally:
        os._exit(0)  # a normal interpreter exit tears AppWorld down for seconds; nothing is left to flush


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "unpack":
        op_unpack(sys.argv[2], sys.argv[3])
    else:
        serve()
