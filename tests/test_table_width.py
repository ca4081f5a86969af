"""The end-of-sweep table fits a terminal: a real 4-strategy oracle sweep prints <= 160 columns by default,
and `--wide` still shows every column."""

from __future__ import annotations

import subprocess

from conftest import REPO, SAMPLE_MEMORY, run_in_process

from analysis.fmt import WIDTH


def test_sweep_table_fits_160_columns_and_wide_keeps_everything(tmp_path, capsys):
    from analysis import table as table_module

    runs_dir = tmp_path / "runs"
    proc = run_in_process("model=oracle", "strategy=none,full,core_retrieval,ace", "benchmark=tau2_retail",
                          "benchmark.limit=2", "benchmark.trials=2", f"memory={SAMPLE_MEMORY}", "run_name=narrow",
                          runs_dir=runs_dir, multirun=True)
    assert proc.returncode == 0, proc.stderr[-3000:]

    def table(*extra: str) -> str:  # `python -m analysis.table`'s main, in this process
        capsys.readouterr()
        assert table_module.main([str(runs_dir / "narrow"), *extra]) == 0
        return capsys.readouterr().out

    narrow, wide = table(), table("--wide")
    assert WIDTH == 160 and max(len(line) for line in narrow.splitlines()) <= WIDTH, narrow
    for column in ("strategy", "tasks×k", "errors", "success", "pass^k", "Δ vs none", "tokens", "memory", "cost"):
        assert column in narrow
    rows = [line.split() for line in narrow.splitlines() if line.startswith("memdeliv-scripted/oracle")]
    assert [r[1] for r in rows] == ["none", "full", "core_retrieval", "ace"]
    assert "2×2" in narrow and "^2 " in narrow
    assert max(len(line) for line in wide.splitlines()) > WIDTH
    for column in ("prompt/task", "cached/task", "completion/task", "build (one-off)", "pass^2", "steps/task"):
        assert column in wide and column not in narrow


def test_a_locally_served_model_is_not_labelled_as_openai(tmp_path):
    import json

    from analysis import load_records

    rows = [{"run": "r", "job": f"b/test/openai/smollm2-135m-instruct.q4_1/{s}", "benchmark": "b", "split": "test",
             "model": "openai/smollm2-135m-instruct.q4_1", "user_model": "openai/smollm2-135m-instruct.q4_1",
             "strategy": s, "task_id": "1", "trial": 0, "success": False, "error": None, **extra}
            for s, extra in (("none", {"model_server": "local llama.cpp"}), ("full", {}))]
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    models = load_records([tmp_path]).set_index("strategy")[["model", "user_model"]]
    # the user simulator on the same served model is named as the agent is, not `openai/...` beside it
    assert list(models.loc["none"]) == ["smollm2-135m-instruct.q4_1 (local)"] * 2
    assert list(models.loc["full"]) == ["openai/smollm2-135m-instruct.q4_1"] * 2  # a real provider route stays


def test_the_default_sweeps_table_has_one_line_per_row_within_160_columns(tmp_path, capsys):
    """`make sweep` with no arguments: the local served model, 1 task, the four strategies on the sample memory
    (`[unknown provenance]`), each episode cut at max_steps. Its model cell used to wrap onto a second line."""
    import json

    from analysis import table

    model = "openai/smollm2-135m-instruct.q4_1"
    rows = [{"run": "r", "job": f"tau2_retail/test/{model}/{s}", "benchmark": "tau2_retail", "split": "test",
             "model": model, "user_model": model, "model_server": "local llama.cpp", "strategy": s, "task_id": "0",
             "trial": 0, "success": False, "error": "max_steps", "prompt_tokens": 123_456, "completion_tokens": 2_345,
             "memory_tokens": 0 if s == "none" else 45_678, "steps": 10,
             "memory": None if s == "none" else str(SAMPLE_MEMORY),
             "memory_provenance": None if s == "none" else "unknown provenance"}
            for s in ("none", "full", "core_retrieval", "ace")]
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    capsys.readouterr()
    assert table.main([str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert max(map(len, lines)) <= WIDTH
    header = next(i for i, line in enumerate(lines) if line.startswith("model "))
    body = lines[header + 2:lines.index("", header)]
    assert [line.split("  ")[0] for line in body] == ["smollm2-135m-instruct.q4_1 (local)"] * 4, body


def test_a_sweep_ends_with_a_short_legend_pointing_to_the_full_one(capsys):
    """The full legend (8 lines, the same every time) is `make table`'s; `make sweep` ends with two lines (three with a
    long run path)."""
    from analysis import table

    run = str(REPO / "tests" / "fixtures" / "runs" / "oracle_retail")
    plan = subprocess.run(["make", "-n", "-o", "setup", "sweep", "RUN=x"], cwd=REPO, capture_output=True,
                          text=True, check=True).stdout
    assert any("-m analysis.table runs/x" in line and "--short-legend" in line for line in plan.splitlines())
    capsys.readouterr()
    assert table.main([run, "--short-legend"]) == 0
    short = capsys.readouterr().out.rstrip("\n").split("\n\n")[-1].splitlines()
    assert table.main([run]) == 0
    full = capsys.readouterr().out.rstrip("\n").split("\n\n")[-1].splitlines()
    assert len(short) <= 3 and len(full) > 5 and max(map(len, short)) <= WIDTH
    assert f'make table RUNS="{run}"' in " ".join(short) and not set(short) & set(full)
