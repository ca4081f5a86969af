"""`benchmark.orders=N` (issue 36 item 6): an online learner's trial streams run the task stream in N seeded
orders, trial t in order t // trials; its rows say which (`order`), the tables print success per order and the
spread, and the plan counts the extra episodes. Every other strategy runs one order: its episodes are independent.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest
import stream_roles

from analysis import table
from analysis.plan import orders_of
from analysis.views import orders
from conftest import read_records
from harness.run import compose_job
from harness.runner import resolve, run_job
from harness.runner.job import Capabilities, check_orders


def test_an_online_learner_runs_trials_in_every_order_and_other_strategies_one(artifact):
    online = resolve(compose_job(stream_roles.job(artifact, artifact.parent, "o", "benchmark.orders=3",
                                                  "benchmark.trials=2")))
    assert (online.orders, online.trials) == (3, 6)
    assert [online.order_of(t) for t in range(6)] == [0, 0, 1, 1, 2, 2]
    assert online.seeds[:2] == online.seeds[2:4] == online.seeds[4:]  # orders differ in the task order only
    tasks = online.adapter().tasks()
    ids = [[str(t.id) for t in online.task_order(tasks, trial)] for trial in range(6)]
    assert ids[0] == ids[1] == [str(t.id) for t in tasks]  # order 0: the benchmark's
    assert ids[2] == ids[3] and ids[4] == ids[5] and len({tuple(ids[0]), tuple(ids[2]), tuple(ids[4])}) == 3
    assert all(sorted(i) == sorted(ids[0]) for i in ids)  # a permutation: the same tasks
    assert online.identity["benchmark"]["orders"] == 3  # a resume with other orders would renumber the trials

    full = resolve(compose_job(["model=oracle", "strategy=full", f"memory={artifact}", "benchmark.orders=3",
                                "benchmark.trials=2"]))
    assert (full.orders, full.trials, full.order_of(1)) == (1, 2, None) and "orders" not in full.identity["benchmark"]


def test_a_learner_with_one_stream_through_every_trial_is_refused_orders():
    settings = compose_job(["model=oracle", "strategy=none", "benchmark.orders=2"])
    with pytest.raises(ValueError, match="learns online in one stream"):
        check_orders(settings, Capabilities(uses_memory=False, uses_ground_truth=False, learns_online=True))
    check_orders(settings, Capabilities(uses_memory=False, uses_ground_truth=False, learns_online=True,
                                        trial_streams=True))


def test_each_stream_learns_in_its_order_and_the_table_prints_every_order(artifact, runs_dir, capsys):
    stream_roles.install()
    summary = run_job(compose_job(stream_roles.job(artifact, runs_dir, "orders", "benchmark.orders=2",
                                                   "benchmark.trials=1", "concurrency=2")))
    assert summary["ran"] == 8 and summary["executor"] == "streams"
    job = resolve(compose_job(stream_roles.job(artifact, runs_dir, "orders", "benchmark.orders=2",
                                               "benchmark.trials=1")))
    records = read_records(runs_dir / "orders")
    assert sorted((r["trial"], r["order"]) for r in records) == [(0, 0)] * 4 + [(1, 1)] * 4
    [art] = list((runs_dir / "orders" / "memory").iterdir())
    history = [json.loads(line) for line in (art / "history.jsonl").read_text().splitlines()]
    tasks = job.adapter().tasks()
    for trial in (0, 1):  # each stream met the tasks in its own order, and learned from them in that order
        learned = [h["episode"].split("#")[0] for h in history if h["event"] == "update" and h["stream"] == trial]
        assert learned == [str(t.id) for t in job.task_order(tasks, trial)]
    assert learned != [str(t.id) for t in tasks]

    capsys.readouterr()
    assert table.main([str(runs_dir / "orders")]) == 0
    printed = capsys.readouterr().out
    assert "Task order (benchmark.orders)" in printed
    line = next(line for line in printed.splitlines() if line.strip().startswith("ace_online (GT): success per order"))
    rates = {o: sum(r["success"] for r in records if r["order"] == o) / 4 for o in (0, 1)}
    assert f"0: {100 * rates[0]:.1f}%, 1: {100 * rates[1]:.1f}%" in line
    assert f"spread {100 * abs(rates[0] - rates[1]):.1f} pts" in line and "4 episodes (1 trial)" in line


def test_the_spread_is_best_minus_worst_order_and_infra_counts_as_a_failure():
    rows = [{"benchmark": "b", "split": "test", "model": "m", "strategy": "s", "task_id": f"t{i}", "trial": o * 2 + k,
             "order": o, "success": (i < [6, 3, 9][o]), "error": None} for o in range(3) for k in range(2)
            for i in range(10)]
    rows[0]["error"] = "infra"  # order 0, trial 0, t0: success True recorded, infra: a failure by default
    text = orders.terminal(pd.DataFrame(rows))
    assert text.splitlines()[0].endswith("order 0 is the benchmark's own order.")  # the heading is a whole sentence
    assert "s: success per order 0: 55.0%, 1: 30.0%, 2: 90.0%; spread 60.0 pts" in text
    assert "sd 30.1 pts over 3 orders" in text and "20 episodes (2 trials)" in text
    one_order = pd.DataFrame(rows).query("order == 0")
    assert orders.terminal(one_order) == "" and orders.terminal(pd.DataFrame(rows).drop(columns="order")) == ""


def test_the_plan_counts_every_order_of_an_online_learner_only():
    facts = {"orders": 3, "strategy_options": {}}
    assert (orders_of("ace_online", facts), orders_of("reasoning_bank", facts), orders_of("full", facts)) == (3, 3, 1)
    assert orders_of("reasoning_bank", {"orders": 3, "strategy_options": {"learn_online": False}}) == 1
    assert (orders_of("dynamic_cheatsheet", facts), orders_of("awm_online", facts), orders_of("awm", facts)) == (3, 3, 1)
    assert orders_of("ace_online", {"orders": 1}) == 1
