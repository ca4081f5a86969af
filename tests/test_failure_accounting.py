"""Failure accounting: who stays in the denominator (everything but infra), how tables show why cells fail,
SGC over complete scenarios only, labelled --exclude views, the IBM view's Pass^k cells, per-strategy memory."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any

import pandas as pd
import pytest

import strategies
from conftest import SAMPLE_MEMORY, compose, read_records
from analysis import summarize
from analysis.statistics.metrics import scenario_completeness, sgc, tgc
from analysis.table import main as table_main
from analysis.views import ibm
from analysis.views.displays import errors_cell, scenario_warnings
from harness.errors import FailureTally, StrategyError, call_strategy, classify
from harness.serving.faults import ContextOverflow, InfraError, RequestRejected
from harness.runner import run_job
from harness.runner.job import identity
from strategies import EMPTY, StrategyBase


# ---- the harness side ---------------------------------------------------------------------------------------
@dataclass
class DeliverRaises(StrategyBase):
    """FAKE strategy for tests: its deliver() has a bug."""

    name: str = "boom_deliver"

    def deliver(self, task, step):
        raise KeyError("guideline index out of date")


@dataclass
class UpdateRaises(StrategyBase):
    """FAKE online strategy for tests: delivers nothing, and its update() has a bug."""

    name: str = "boom_update"
    learns_online: bool = True

    def deliver(self, task, step):
        return EMPTY

    def update(self, trajectory):
        raise ZeroDivisionError("no trajectories yet")


@dataclass
class FactsRaise(StrategyBase):
    """FAKE strategy for tests: delivers nothing, and its record_facts() has a bug."""

    name: str = "boom_facts"

    def deliver(self, task, step):
        return EMPTY

    def record_facts(self, trajectory):
        raise KeyError("cited_steps")


@pytest.fixture(autouse=True, scope="module")
def fake_strategies():
    from harness.scripted.oracle import install

    install()
    strategies.register("boom_deliver", lambda ctx: DeliverRaises())
    strategies.register("boom_update", UpdateRaises)  # its class declares it learns online
    strategies.register("boom_facts", lambda ctx: FactsRaise())
    yield


def run_strategy(name: str, runs_dir):
    cfg = compose("model=oracle", "benchmark.limit=2", "progress=false", "concurrency=1", f"runs_dir={runs_dir}",
                  f"run_name={name}")
    return run_job(replace(cfg, strategy=replace(cfg.strategy, name=name))), read_records(runs_dir / name)


def test_classify_labels_each_kind():
    assert classify(ContextOverflow("m: context window exceeded"))[0] == "context_overflow"
    assert not isinstance(ContextOverflow("x"), InfraError)  # never excluded as infra
    assert classify(InfraError("provider down after 3 attempts"))[0] == "infra"
    assert classify(RequestRejected("m: request rejected: content filter"))[0] == "request_rejected"
    assert classify(StrategyError("ace", "update", RequestRejected("filtered")))[0] == "request_rejected"
    assert classify(ValueError("a bug in our code"))[0] == "harness"
    with pytest.raises(StrategyError) as caught:
        call_strategy(DeliverRaises(), "deliver", None, None)
    label, detail = classify(caught.value)
    assert label == "strategy" and "boom_deliver" in detail and "KeyError" in detail


def test_strategy_whose_deliver_raises_fails_loudly_and_is_counted(runs_dir, capsys):
    summary, records = run_strategy("boom_deliver", runs_dir)
    assert [(r["error"], r["success"]) for r in records] == [("strategy", False)] * 2
    assert "raised in deliver()" in records[0]["error_detail"] and "guideline index out of date" in \
        records[0]["error_detail"]
    assert summary["errors"] == {"strategy": 2} and summary["infra_errors"] == 0
    job = next(iter(json.loads((runs_dir / "boom_deliver" / "manifest.json").read_text())["jobs"].values()))
    assert job["errors"] == {"strategy": 2} and len(job["failure_details"]["strategy"]) == 2
    err = capsys.readouterr().err
    assert "!!!!" in err and "2 episode(s) failed with error 'strategy'" in err
    # resumed: nothing left to run, and the end-of-job line still counts the job's errors, as its progress line does
    from harness.run import report_job

    again, _ = run_strategy("boom_deliver", runs_dir)
    assert (again["ran"], again["skipped"], again["errors"]) == (0, 2, {"strategy": 2})
    capsys.readouterr()
    report_job(again)
    assert "errors over all 2 episodes: strategy 2 (each a failed episode" in capsys.readouterr().out
    row = summarize(pd.DataFrame(records).assign(run="r"), n_boot=20).iloc[0]
    assert row["records"] == 2 and row["success"] == 0.0  # in the denominator


def test_online_update_that_raises_marks_its_episode_strategy(runs_dir):
    summary, records = run_strategy("boom_update", runs_dir)
    assert {r["error"] for r in records} == {"strategy"} and not any(r["success"] for r in records)
    # the runner calls learn(), whose StrategyBase default is the strategy's own update(): the trace names it
    assert "raised in learn()" in records[0]["error_detail"] and "in update" in records[0]["error_detail"]


def test_record_facts_that_raises_is_the_strategy_s_failure(runs_dir):
    summary, records = run_strategy("boom_facts", runs_dir)
    assert [(r["error"], r["success"]) for r in records] == [("strategy", False)] * 2
    assert "raised in record_facts()" in records[0]["error_detail"] and summary["infra_errors"] == 0


def test_failure_tally_keeps_counts_and_first_details():
    tally = FailureTally()
    for i, label in enumerate(["infra", "harness", None, "context_overflow", "harness", "harness", "harness"]):
        tally.add({"task_id": str(i), "trial": 0, "error": label, "error_detail": f"d{i}"})
    facts = tally.facts()
    assert facts["errors"] == {"context_overflow": 1, "harness": 4, "infra": 1} and facts["infra_errors"] == 1
    assert len(facts["failure_details"]["harness"]) == FailureTally.KEEP and "strategy" not in facts["failure_details"]


# ---- per-strategy memory -------------------------------------------------------------------------------------
ACE_PLAYBOOK = "strategies/samples/ace_sample_playbook.jsonl"


def test_memory_by_strategy_wins_for_its_strategy_and_is_part_of_identity():

    base = ("model=oracle", f"memory={SAMPLE_MEMORY}", f"+memory_by_strategy.ace={ACE_PLAYBOOK}")
    ace, full = compose("strategy=ace", *base), compose("strategy=full", *base)
    assert ace.job_memory == ACE_PLAYBOOK and full.job_memory == str(SAMPLE_MEMORY)
    assert identity(ace)["memory"]["path"] == ACE_PLAYBOOK
    assert identity(ace)["memory"]["sha256_16"] != identity(compose("strategy=ace", "model=oracle",
                                                                    f"memory={SAMPLE_MEMORY}"))["memory"]["sha256_16"]


def test_memory_by_strategy_is_validated():
    from harness.checks import ConfigError, check_memory_by_strategy

    with pytest.raises(ConfigError, match="not an ACE playbook"):  # the guideline file the others use
        check_memory_by_strategy(compose("strategy=ace", "model=oracle", f"+memory_by_strategy.ace={SAMPLE_MEMORY}"))
    with pytest.raises(ConfigError, match="unknown strategy"):
        check_memory_by_strategy(compose("model=oracle", f"+memory_by_strategy.acee={ACE_PLAYBOOK}"))
    check_memory_by_strategy(compose("strategy=ace", "model=oracle", f"+memory_by_strategy.ace={ACE_PLAYBOOK}"))


def test_ibm_ace_vs_evolve_demands_a_playbook_for_ace():
    from harness.checks import ConfigError, check_memory_by_strategy

    cfg = compose("+experiment=ibm_ace_vs_evolve", "strategy=full", f"memory={SAMPLE_MEMORY}")
    with pytest.raises(ConfigError, match="memory_by_strategy.ace must be set"):
        check_memory_by_strategy(cfg)
    given = compose("+experiment=ibm_ace_vs_evolve", "strategy=ace", f"memory={SAMPLE_MEMORY}",
                    f"memory_by_strategy.ace={ACE_PLAYBOOK}")
    check_memory_by_strategy(given)


# ---- analysis ------------------------------------------------------------------------------------------------
def appworld_records(rows: list[tuple[str, bool, str | None]], strategy: str = "none") -> pd.DataFrame:
    return pd.DataFrame([{"run": "r", "benchmark": "appworld", "split": "test_normal", "model": "m",
                          "strategy": strategy, "task_id": t, "trial": 0, "success": ok, "error": err,
                          "scenario_id": t[:7], "prompt_tokens": 10, "completion_tokens": 1}
                         for t, ok, err in rows])


def scenario_with_an_infra_task() -> pd.DataFrame:
    return appworld_records([
        ("aaaaaaa_1", True, None), ("aaaaaaa_2", True, None), ("aaaaaaa_3", True, None),
        ("bbbbbbb_1", True, None), ("bbbbbbb_2", True, None), ("bbbbbbb_3", True, "infra"),  # never "passed"
        ("ccccccc_1", True, None), ("ccccccc_2", False, "context_overflow"), ("ccccccc_3", True, None)])


def test_an_infra_task_fails_its_scenario_by_default():
    df = scenario_with_an_infra_task()  # tau2-bench's leaderboard convention: an infra trial is a failed trial
    assert scenario_completeness(df).all()
    assert sgc(df) == pytest.approx(1 / 3)  # a passes; b fails (its infra task); c fails (an overflow)
    assert tgc(df) == pytest.approx(7 / 9)  # the infra task is a failed task, even if its record said success
    row = summarize(df, n_boot=20).iloc[0]
    assert (row["scenarios"], row["scenarios_incomplete"], row["infra_errors"]) == (3, 0, 1)
    assert scenario_warnings(summarize(df, n_boot=20)) == []


def test_exclude_infra_leaves_out_a_scenario_with_an_infra_task_and_says_so():
    df, out = scenario_with_an_infra_task(), ("infra",)
    complete = scenario_completeness(df, out)
    assert complete.to_dict() == {"aaaaaaa": True, "bbbbbbb": False, "ccccccc": True}
    assert sgc(df, out) == pytest.approx(0.5)  # a passes, c fails (an overflow is a failure); b is not counted
    assert tgc(df, out) == pytest.approx(7 / 8)  # the infra task is out of TGC, the overflow is in (failed)
    row = summarize(df, n_boot=20, exclude=out).iloc[0]
    assert (row["scenarios"], row["scenarios_incomplete"], row["sgc"]) == (2, 1, pytest.approx(0.5))
    assert "SGC over 2 complete scenarios; 1 incomplete" in scenario_warnings(summarize(df, 20, out))[0]


def test_sgc_warnings_name_the_assembly_setting_when_it_varies():
    one = [("aaaaaaa_1", True, None)]  # 1 of the scenario's 3 tasks: incomplete in both settings
    df = pd.concat([appworld_records(one).assign(assembly=f"answer_mode={m}") for m in ("plain", "rebuild")])
    lines = scenario_warnings(summarize(df, n_boot=20))
    assert sorted(line.split(" [")[1].split("]")[0] for line in lines) == ["answer_mode=plain", "answer_mode=rebuild"]


def test_sgc_uses_complete_scenarios_only_when_a_limit_cut_one():
    # LIMIT=4 on AppWorld: the second scenario has only its first task
    df = appworld_records([("aaaaaaa_1", True, None), ("aaaaaaa_2", True, None), ("aaaaaaa_3", True, None),
                           ("bbbbbbb_1", True, None)])
    row = summarize(df, n_boot=20).iloc[0]
    assert (row["scenarios"], row["scenarios_incomplete"], row["sgc"]) == (1, 1, 1.0)
    # with the split's own scenario size in the record (scenario_tasks), a 1-task scenario is complete
    row = summarize(df.assign(scenario_tasks=[3, 3, 3, 1]), n_boot=20).iloc[0]
    assert (row["scenarios"], row["scenarios_incomplete"]) == (2, 0)


def test_runner_warns_when_a_limit_cuts_a_scenario(tmp_path, capsys):
    from harness.runner.loop import warn_cut_scenarios
    from harness.store import RunStore

    store = RunStore(tmp_path / "run")
    warn_cut_scenarios(store, "appworld/train/m/none", ["bbbbbbb"])
    assert "SGC uses complete scenarios only" in capsys.readouterr().err
    assert any("bbbbbbb" in n for n in json.loads((tmp_path / "run" / "manifest.json").read_text())["notes"])


def tau2_records(tmp_path) -> str:
    rows = [{"run": "x", "benchmark": "tau2_retail", "split": "test", "model": "m", "strategy": s, "task_id": str(t),
             "trial": 0, "success": ok, "error": err, "prompt_tokens": 10, "completion_tokens": 1}
            for s, t, ok, err in [("none", 1, True, None), ("none", 2, False, None), ("full", 1, True, None),
                                  ("full", 2, False, "context_overflow"), ("full", 3, False, "infra"),
                                  ("none", 3, True, None)]]
    path = tmp_path / "results.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def test_table_counts_errors_per_cell_and_exclude_relabels_and_recomputes(tmp_path, capsys):
    path = tau2_records(tmp_path)
    assert table_main([path]) == 0
    out = capsys.readouterr().out
    full = next(line for line in out.splitlines() if line.split()[1:2] == ["full"])
    assert "ctx 1, infra 1" in full and "33.3%" in full  # the overflow and the infra trial are failures: 1 of 3
    assert out.splitlines()[0] == "Rates: infra errors counted as failures (tau2-bench leaderboard convention)"
    assert "non-default" not in out.lower()
    assert table_main([path, "--exclude", "context_overflow"]) == 0
    out = capsys.readouterr().out
    full = next(line for line in out.splitlines() if line.split()[1:2] == ["full"])
    assert "50.0%" in full and "ctx 1, infra 1" in full  # recomputed without it, still counted
    assert out.splitlines()[0] == ("Rates: infra errors counted as failures (tau2-bench leaderboard convention); "
                                   "EXCLUDING context_overflow errors (non-default view)") and "NON-DEFAULT" in out
    assert table_main([path, "--exclude", "infra"]) == 0
    out = capsys.readouterr().out
    full = next(line for line in out.splitlines() if line.split()[1:2] == ["full"])
    assert "50.0%" in full and "ctx 1, infra 1" in full  # task 3's infra trial left out: 1 of 2
    assert out.splitlines()[0] == "Rates: EXCLUDING infra errors (non-default view)"
    assert table_main([path, "--exclude", "context_overflw"]) == 2  # a typo is an error, not a silent no-op


def test_errors_cell_is_compact():
    assert errors_cell(pd.Series({"err_context_overflow": 3, "err_agent": 1, "err_infra": 2})) == \
        "ctx 3, agent 1, infra 2"
    assert errors_cell(pd.Series({"err_agent": float("nan")})) == "-"


def test_ibm_view_never_shows_another_rate_under_a_pass_k_label(tmp_path):
    (tmp_path / "mine.yaml").write_text("analysis:\n  view: ibm_tau2\n  models:\n    '-': m\n")
    rows = [{"run": "one", "benchmark": "tau2_retail", "split": "test", "model": "m", "strategy": s,
             "task_id": str(t), "trial": 0, "success": t % 2 == 0, "error": None, "prompt_tokens": 10,
             "completion_tokens": 1} for s in ("none", "full") for t in range(4)]
    table = ibm.view("mine", summarize(pd.DataFrame(rows), n_boot=20), experiments_dir=tmp_path)
    measured = table[table["row"].str.startswith("measured")]
    pass4 = measured[measured["metric"] == "pass^4"]
    assert len(pass4) and (pass4["value"] == "n/a (trials < 4)").all()  # one trial: no Pass^4 to show
    success = measured[measured["metric"] == "success"]
    assert success["value"].str.startswith("50.0%").all()  # the rate itself is still shown as success


# ---- AppWorld: the same labels, without the engine (a FAKE worker and a FAKE model) ----------------------------
class FakeWorker:
    """Stands in for an AppWorld engine worker: opens a toy task, runs nothing, evaluates as passed."""

    def __init__(self):
        self.ops = []

    def request(self, op, timeout, **kw):
        self.ops.append(op)
        if op == "open":
            return {"instruction": "What is 2 + 3?", "supervisor": {"first_name": "Toy", "last_name": "S",
                                                                    "email": "t@example.com", "phone_number": "5"}}
        if op == "execute":
            return {"output": "ok", "completed": False}
        if op == "evaluate":
            return {"success": True, "pass_count": 2, "num_tests": 2, "report": "passed"}
        return {}


class FakePool:
    def __init__(self):
        self.worker = FakeWorker()

    def lease(self):
        from contextlib import contextmanager

        @contextmanager
        def held():
            yield self.worker
        return held()


@dataclass
class OverflowOnSecondStep:
    """FAKE model client: one code step, then the prompt no longer fits."""

    model: str = "fake/overflow"
    kwargs: dict = None
    calls: int = 0

    def __post_init__(self):
        self.kwargs = {}

    def complete(self, messages, tools=None):
        from harness.serving.model_client import Completion, Usage

        self.calls += 1
        if self.calls > 1:
            raise ContextOverflow(f"{self.model}: context window exceeded: 9000 > 8192")
        return Completion(content="```python\nprint(1)\n```", tool_calls=(),
                          usage=Usage(prompt_tokens=100, completion_tokens=5, cached_tokens=None, cost_usd=None,
                                      latency_s=0.0))


@dataclass
class FakeModelSpec:
    settings: Any = None  # the job's model settings
    scripted: bool = False

    def clients(self, task_script=None):
        return OverflowOnSecondStep(), None


@pytest.mark.parametrize("strategy, label", [(None, "context_overflow"), (DeliverRaises(), "strategy")])
def test_appworld_episode_labels_overflow_and_strategy_failures(tmp_path, strategy, label):
    from collections import Counter

    from harness.benchmarks.appworld.adapter import AppWorldBenchmark, AppWorldTask
    from harness.ledger import MemoryTokenCounter

    cfg = compose("benchmark=appworld")
    bench = AppWorldBenchmark(cfg.benchmark)
    bench.__dict__["_scenario_sizes"] = Counter({"abc1234": 3})  # no data needed: the split's scenario sizes
    pool = FakePool()
    bench.workers = lambda: pool
    record, _ = bench.run_episode(AppWorldTask(id="abc1234_1", split="train"), trial=0, seed=1, strategy=strategy,
                                  model=FakeModelSpec(cfg.model), counter=MemoryTokenCounter("gpt-4o"),
                                  trajectory_path=tmp_path / "t.json")
    fields = record.fields()
    assert (fields["error"], fields["success"], fields["termination"]) == (label, False, label)
    assert fields["scenario_tasks"] == 3 and "evaluate" not in pool.worker.ops


def test_a_strategy_whose_own_provider_is_down_is_infra_not_strategy():
    with pytest.raises(StrategyError) as caught:
        call_strategy(type("S", (), {"name": "s", "deliver": lambda self, t, s: (_ for _ in ()).throw(
            InfraError("reflector: InternalServerError after 4 attempts"))})(), "deliver", None, None)
    assert classify(caught.value)[0] == "infra"


def test_make_tables_exclude_is_labelled_in_the_files(tmp_path, capsys):
    from analysis.tables import main as tables_main

    path = tau2_records(tmp_path)
    assert tables_main([path, "--exclude", "context_overflow", "--no-plots", "--out", str(tmp_path / "a")]) == 0
    written = (tmp_path / "a" / "strategies.md").read_text()
    assert written.count("NON-DEFAULT: rates exclude context_overflow") == 1 and "ctx 1, infra 1" in written
    assert written.startswith("Rates: infra errors counted as failures (tau2-bench leaderboard convention); "
                              "EXCLUDING context_overflow errors (non-default view)\n")
    csv = pd.read_csv(tmp_path / "a" / "strategies.csv").set_index("strategy")
    assert csv.loc["full", "success"] == 0.5 and csv.loc["full", "excluded"] == 1  # the infra trial: a failure
    assert tables_main([path, "--exclude", "infra", "--no-plots", "--out", str(tmp_path / "b")]) == 0
    written = (tmp_path / "b" / "strategies.md").read_text()
    assert written.startswith("Rates: EXCLUDING infra errors (non-default view)\n")
    csv = pd.read_csv(tmp_path / "b" / "strategies.csv").set_index("strategy")
    assert csv.loc["full", "success"] == 0.5 and csv.loc["full", "excluded"] == 1  # task 3 out, task 2 failed
