"""τ² databases read once per process (harness/benchmarks/tau2/fresh_db.py): environments built from them replay
gold actions to the same DB hash as tau2's own (read from db.json each time), tau2's evaluator gives the same
RewardInfo through either, and nothing one episode changes reaches another."""

from __future__ import annotations

import pytest
from tau2.data_model.message import AssistantMessage, ToolCall
from tau2.data_model.simulation import SimulationRun
from tau2.evaluator.evaluator import EvaluationType, evaluate_simulation
from tau2.registry import registry
from tau2.utils.utils import get_dict_hash

from harness.benchmarks.tau2 import fresh_db
from harness.benchmarks.tau2.data import TaskSource

DOMAINS = ("retail", "airline")


def replay(env, task, skip: int | None = None) -> str:
    """Gold actions replayed as tau2's DB check does (a failing one ignored), `skip` left out; the DB hash."""
    init = task.initial_state
    env.set_state(initialization_data=init.initialization_data if init else None,
                  initialization_actions=init.initialization_actions if init else None,
                  message_history=(init.message_history or []) if init else [])
    for i, action in enumerate(task.evaluation_criteria.actions or []):
        if i != skip:
            try:
                env.make_tool_call(tool_name=action.name, requestor=action.requestor, **action.arguments)
            except Exception:
                pass
    return env.get_db_hash()


def with_writes(domain: str, n: int = 8) -> list:
    """The first n test tasks of `domain` whose gold actions change the database."""
    source = TaskSource(domain)
    pristine = source.environment().get_db_hash()
    return [t for t in source.load_tasks("test") if replay(source.environment(), t) != pristine][:n]


@pytest.mark.parametrize("domain", DOMAINS)
def test_gold_replays_hash_as_tau2_s_own_environment(domain):
    source = TaskSource(domain)
    tasks = with_writes(domain)
    assert len(tasks) == 8
    for task in tasks:
        ours, theirs = source.environment(), registry.get_env_constructor(domain)()
        assert replay(ours, task) == replay(theirs, task)
        assert ours.get_db_hash() == get_dict_hash(ours.tools.db.model_dump())  # tau2's formula, whole dump
    # the last write left out: a different database, hashed alike both ways
    task = tasks[0]
    last = len(task.evaluation_criteria.actions) - 1
    assert replay(source.environment(), task, skip=last) == replay(registry.get_env_constructor(domain)(), task,
                                                                       skip=last)


@pytest.mark.parametrize("domain", DOMAINS)
def test_what_one_environment_changes_never_reaches_another(domain):
    source = TaskSource(domain)
    before = registry.get_env_constructor(domain)().get_db_hash()
    changed = source.environment()
    assert replay(changed, with_writes(domain, 1)[0]) != before
    assert source.environment().get_db_hash() == before  # a fresh one is the file's database again
    # every way into a table hands out a copy of the pristine record, never the record itself
    table_name, table = next((k, v) for k, v in changed.tools.db.__dict__.items() if isinstance(v, fresh_db.Table))
    key = next(iter(table))
    for reach in (lambda t: t[key], lambda t: t.get(key), lambda t: dict(t)[key], lambda t: {**t}[key],
                  lambda t: dict(t.items())[key], lambda t: list(t.values())[list(t).index(key)],
                  lambda t: t.copy()[key], lambda t: t.pop(key)):
        other = getattr(source.environment().tools.db, table_name)
        record = reach(other)
        assert record is not dict.__getitem__(getattr(source.environment().tools.db, table_name), key)
        record.__dict__.clear()  # vandalise the copy: the next environment must not see it
    assert source.environment().get_db_hash() == before


def simulation_of(task, env, skip_last_write: bool) -> SimulationRun:
    """An agent that makes the task's gold calls (the last write left out when asked) and stops."""
    actions = [a for a in task.evaluation_criteria.actions or [] if a.requestor == "assistant"]
    if skip_last_write:
        writes = [i for i, a in enumerate(actions)
                  if env.tools.tool_type(a.name).value == "write"]
        del actions[writes[-1]]
    messages = []
    for i, action in enumerate(actions):
        call = ToolCall(id=f"call_{i}", name=action.name, arguments=action.arguments, requestor="assistant")
        messages += [AssistantMessage(role="assistant", tool_calls=[call]), env.get_response(call)]
    messages.append(AssistantMessage(role="assistant", content="Done."))
    return SimulationRun(id="sim", task_id=task.id, start_time="t0", end_time="t1", duration=0.0,
                         termination_reason="agent_stop", messages=messages)


@pytest.mark.parametrize("skip_last_write", [False, True])
def test_tau2_s_evaluator_gives_the_same_reward_info_either_way(skip_last_write):
    source = TaskSource("retail")
    task = with_writes("retail", 1)[0]
    simulation = simulation_of(task, registry.get_env_constructor("retail")(), skip_last_write)
    rewards = [evaluate_simulation(simulation=simulation, task=task, solo_mode=False,
                                   evaluation_type=EvaluationType.ALL, domain=domain).model_dump()
               for domain in ("retail", source.evaluator_domain)]
    assert source.evaluator_domain != "retail" and rewards[0] == rewards[1]
    assert rewards[0]["db_check"]["db_match"] is not skip_last_write


def test_disabled_reads_the_file_as_tau2_does(monkeypatch):
    monkeypatch.setattr(fresh_db, "enabled", False)
    env = TaskSource("retail").environment()
    assert not any(isinstance(v, fresh_db.Table) for v in env.tools.db.__dict__.values())
    assert env.get_db_hash() == registry.get_env_constructor("retail")().get_db_hash()


def test_a_db_file_rewritten_in_place_is_read_again(tmp_path):
    """A data dir rebuilt at the same path in a long-lived process (a notebook): never the stale database."""
    import json
    import os

    from tau2.domains.retail.data_model import RetailDB

    path = tmp_path / "db.json"
    data = json.loads((TaskSource("retail").files["db"]).read_text())
    path.write_text(json.dumps(data))
    first = fresh_db.fresh(RetailDB, path)
    user = next(iter(data["users"]))
    data["users"][user]["address"]["city"] = "Zzyzx"
    path.write_text(json.dumps(data))
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 1_000_000))  # a later write, surely
    second = fresh_db.fresh(RetailDB, path)
    assert second.users[user].address.city == "Zzyzx" != first.users[user].address.city
    assert second.model_dump() == RetailDB.load(str(path)).model_dump()
