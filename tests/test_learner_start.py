"""Where an online learner starts (docs/strategies.md): `make sweep` starts every online design empty, as their
papers do (START=empty, the default), START=train starts reasoning_bank from its train bank and refuses a learner
with no train artifact, and each learner's row says which (`learner_start`)."""

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


def test_make_sweep_starts_every_learner_empty_and_start_train_from_the_train_bank_alike():
    default = make_n(f"STRATEGIES={LEARNERS}", "LIMIT=10")
    assert default.returncode == 0 and "+memory_by_strategy.reasoning_bank=null" in default.stdout
    trained = make_n("STRATEGIES=reasoning_bank", "START=train", "REASONING_BANK=runs/bank.jsonl")
    assert trained.returncode == 0 and "+memory_by_strategy.reasoning_bank=runs/bank.jsonl" in trained.stdout
    refused = make_n(f"STRATEGIES={LEARNERS}", "START=train")  # not all alike: refused, one line
    assert refused.returncode == 2 and "dynamic_cheatsheet awm_online has no train artifact" in refused.stderr
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
