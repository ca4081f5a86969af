"""Bad config exits 2, names the valid choices, and creates no run directory."""

from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import HUNG_S, REPO, config_check, run_cli, run_in_process

# every experiment config on disk, in the order the message lists them: a new one joins the list by itself
EXPERIMENTS = ", ".join(sorted(p.stem for p in (REPO / "configs" / "experiment").glob("*.yaml")))


@pytest.mark.parametrize("override, expected", [
    # an unknown group choice lists the valid ones, without Hydra's config search path
    ("model=no_such_model", "model=no_such_model: no such choice; available: litellm, local, oracle, simulated"),
    ("benchmark=tau2_nowhere", "benchmark=tau2_nowhere: no such choice; available: appworld, tau2_airline,"),
    ("+experiment=nope", f"experiment=nope: no such choice; available: {EXPERIMENTS}\n"),
    # a wrong type names the key and what it takes (from the schema)
    ("benchmark.limit=abc", "benchmark.limit=abc: expected an integer or null"),
    ("progress=maybe", "progress=maybe: expected true or false"),
    ("benchmark.nope=1", "benchmark.nope: no such key; valid keys here: name, domain, split, limit,"),
    ("benchmark.limit=[1", "cannot parse 'benchmark.limit=[1'"),
    # STRATEGIES=none, : the stray comma and what is expected, not the grammar's token list
    ("strategy=none,", "strategy=none,: an empty name in the comma list (a stray comma); expected names separated "
                       "by single commas, e.g. strategy=none\n"),
    ("benchmark.trials=0", "trials"),
    ("benchmark.split=small", "train, test, base"),  # retail has no small split
    ("benchmark.placement=middle", "after_policy"),
    ("memory=/no/such/file.jsonl", "memory file not found"),
    ("benchmark.task_ids=[nope]", "unknown task ids"),
])
def test_bad_config_exits_2_at_the_config_check(override, expected, runs_dir, capsys):
    code, err = config_check(capsys, "model=oracle", override, "run_name=bad", runs_dir=runs_dir)
    assert code == 2, err[-2000:]
    assert expected in err
    assert err.strip().count("\n") == 0, err  # one line, no Traceback or search path
    assert not runs_dir.exists()


def test_the_cli_refuses_a_bad_config_in_one_line_without_run_dir(runs_dir):
    """The whole command line, as a user runs it (the cases above go through the same check in-process). Its own
    process: the strategies it lists are exactly the installed ones (a test's in-process fakes are not)."""
    proc = run_cli("model=oracle", "strategy=bogus", "run_name=bad", runs_dir=runs_dir)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "strategy=bogus: no such choice; available: ace, ace_online, ace_retrieval, awm, awm_online, core_only, " \
           "core_retrieval, dynamic_cheatsheet, exp_rag, full, long_context, none, on_demand, placebo, " \
           "protocol_only, reasoning_bank\n" in proc.stderr
    assert proc.stderr.strip().count("\n") == 0, proc.stderr
    assert not runs_dir.exists()


def test_bad_choice_inside_a_sweep_fails_before_any_job_runs(runs_dir):
    proc = run_in_process("model=oracle", "strategy=none,bogus", "benchmark.limit=1", "run_name=bad", runs_dir=runs_dir,
                          multirun=True)
    assert proc.returncode == 2
    assert "bogus" in proc.stderr and not runs_dir.exists()


def test_malformed_memory_file_is_named_with_line(tmp_path, runs_dir):
    bad = tmp_path / "mem.jsonl"
    bad.write_text('{"id": "a", "text": "ok"}\n{"id": "b", "text": \n')
    proc = run_in_process("model=oracle", "strategy=full", f"memory={bad}", "run_name=bad", runs_dir=runs_dir)
    assert proc.returncode == 2
    assert f"{bad}:2" in proc.stderr and not runs_dir.exists()


def test_a_refused_command_line_never_loads_litellm(runs_dir):
    """A typo is answered before the runner loads LiteLLM (seconds of import): harness.runner's `run_job` and the
    exceptions of a model call (harness/serving/faults.py) come without it."""
    code = ("import sys\nfrom harness.run import checked_command\ntry:\n"
            f"    checked_command(['-m', 'runs_dir={runs_dir}', 'model=oracle', 'strategy=none,full', "
            "'strategy.options.topk=3'])\nexcept SystemExit as exc:\n    print(exc.code, 'litellm' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=HUNG_S)
    assert proc.stdout.split() == ["2", "False"], proc.stderr[-2000:]


@pytest.mark.parametrize("strategy, expected", [
    ("reasoning_bank", "starts from a reasoning_bank artifact (_meta.kind 'reasoning_bank')"),
    ("awm", "needs a workflows artifact (_meta.kind 'workflows')"),
    ("exp_rag", "needs an experiences artifact (_meta.kind 'experiences')"),
    ("long_context", "needs an experiences artifact (_meta.kind 'experiences')"),
])
def test_an_artifact_the_strategy_cannot_start_from_exits_2_before_any_job_runs(strategy, expected, artifact,
                                                                                runs_dir, capsys):
    # a sweep's first job must not run before its second is refused (strategies' check_memory, at the check)
    code, err = config_check(capsys, "model=oracle", f"strategy=none,{strategy}", f"memory={artifact}",
                             "run_name=bad", runs_dir=runs_dir, multirun=True)
    assert code == 2 and expected in err and "Traceback" not in err, err[-2000:]
    assert not runs_dir.exists()
