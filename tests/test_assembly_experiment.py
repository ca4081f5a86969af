"""`+experiment=assembly`: the sweep's jobs stay apart (job keys, records) and `make tables` splits by them."""

from __future__ import annotations

from analysis import load_records
from analysis.tables import main as tables_main
from conftest import SAMPLE_MEMORY, compose, run_in_process

ORACLE = ["model=oracle", "model.max_retries=0"]


def test_assembly_experiment_composes_with_its_axes():
    cfg = compose("+experiment=assembly")
    assert cfg.benchmark.max_observation_chars == 20000 and cfg.analysis.get("view") is None
    assert compose("+experiment=assembly", "benchmark=appworld").benchmark.name == "appworld"  # the user's wins


def test_assembly_sweep_keeps_jobs_apart_and_tables_group_by_the_axes(runs_dir, capsys):
    proc = run_in_process("+experiment=assembly", *ORACLE, "strategy=none,full",
                          "benchmark.placement=after_policy,first_user_message", "benchmark.context_policy=fail",
                          "benchmark.answer_mode=plain,rebuild", "benchmark.limit=1", f"memory={SAMPLE_MEMORY}",
                          "run_name=asm", runs_dir=runs_dir, multirun=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    df = load_records([runs_dir / "asm"])
    assert len(df) == 8 and df["job"].nunique() == 8  # 2 strategies x 2 placements x 2 answer modes
    assert set(df["assembly"]) == {f"placement={p}, answer_mode={a}" for p in ("after_policy", "first_user_message")
                                   for a in ("plain", "rebuild")}
    rebuild = df[df["answer_mode"] == "rebuild"]
    assert (rebuild["answer_calls"] == 1).all() and (df[df["answer_mode"] == "plain"]["answer_calls"] == 0).all()
    assert tables_main([str(runs_dir / "asm"), "--no-plots"]) == 0
    written = (runs_dir / "asm" / "analysis" / "strategies.md").read_text()  # every column (the terminal: compact)
    table = next(chunk for chunk in written.split("\n\n") if chunk.startswith("|")).splitlines()  # after the task-set lines
    assert "| assembly" in table[0] and "answer calls/task" in table[0] and "cache write/task" in table[0]
    rows = table[2:]
    assert len(rows) == 8 and sum("placement=first_user_message, answer_mode=rebuild" in r for r in rows) == 2
    # Δ vs none is taken within the same assembly settings: every full row has one
    assert all(" pts " in r for r in rows if "| full" in r)
