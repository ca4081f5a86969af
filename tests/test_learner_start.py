"""Where an online learner starts (docs/strategies.md): `make sweep` starts every online design empty, as their
papers do (START=empty, the default), START=train starts each from its train artifact (built first when missing),
and each learner's row says which (`learner_start`); tests/test_train_start.py runs both starts."""

from __future__ import annotations

import subprocess

from conftest import REPO, read_records
from harness.run import compose_job
from harness.runner import run_job

LEARNERS = "reasoning_bank,dynamic_cheatsheet,awm_online"


def make_n(*args: str) -> subprocess.CompletedProcess:
    """What `make sweep` would run (nothing is run; `setup` is not remade)."""
    return subprocess.run(["make", "-n", "--no-print-directory", "-o", "setup", "sweep", "MODEL=simulated", *args],
                          cwd=REPO, capture_output=True, text=True, timeout=60)


def test_make_sweep_starts_every_learner_empty_and_start_train_from_its_train_artifact_alike(tmp_path):
    default = make_n(f"STRATEGIES={LEARNERS}", "LIMIT=10")
    assert default.returncode == 0 and "+memory_by_strategy.reasoning_bank=null" in default.stdout
    assert "memory_by_strategy.awm_online" not in default.stdout and "harness.memory" not in default.stdout
    built = {"REASONING_BANK": tmp_path / "bank.jsonl", "AWM": tmp_path / "wf.jsonl", "CHEATSHEET": tmp_path / "cs.jsonl"}
    built["AWM"].write_text("")
    trained = make_n(f"STRATEGIES={LEARNERS}", "LIMIT=10", "START=train", *[f"{k}={v}" for k, v in built.items()])
    assert trained.returncode == 0 and "memory_by_strategy.reasoning_bank=null" not in trained.stdout
    for strategy, var in (("reasoning_bank", "REASONING_BANK"), ("awm_online", "AWM"), ("dynamic_cheatsheet",
                                                                                       "CHEATSHEET")):
        assert f"+memory_by_strategy.{strategy}={built[var]}" in trained.stdout
    # a missing artifact is built first where it is named; one that is there is used as it is
    assert f"harness.memory.reasoning_bank --name tau2_retail__simulated --out {built['REASONING_BANK']}" in trained.stdout
    assert f"harness.memory.cheatsheet --name tau2_retail__simulated --out {built['CHEATSHEET']}" in trained.stdout
    assert "harness.memory.workflows" not in trained.stdout
    only = make_n("STRATEGIES=none,awm_online", "START=train", f"AWM={built['AWM']}")  # only the learners it runs
    assert "memory_by_strategy.reasoning_bank" not in only.stdout and "memory_by_strategy.dynamic" not in only.stdout
    assert make_n("START=bank").returncode == 2


def test_a_null_entry_starts_the_learner_empty_and_every_row_says_so(artifact, runs_dir):
    for strategy in LEARNERS.split(","):
        cfg = compose_job(["model=simulated", f"model.world={artifact}", "benchmark=tau2_retail", "benchmark.limit=2",
                           f"strategy={strategy}", f"memory={artifact}", "+memory_by_strategy.reasoning_bank=null",
                           f"runs_dir={runs_dir}", "progress=false", "run_name=start"])
        run_job(cfg)
    rows = read_records(runs_dir / "start")
    assert {r["strategy"] for r in rows} == set(LEARNERS.split(",")) and len(rows) == 6
    assert all(r["learner_start"] == "empty" for r in rows)
    # the null entry wins over memory= (a guideline file reasoning_bank would refuse); the other two read no artifact
    assert all(r["memory"] is None for r in rows if r["strategy"] == "reasoning_bank")
