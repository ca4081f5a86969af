"""A bad strategy option exits 2 at config-check time: clear message, no traceback, no run directory
(not even Hydra's multirun.yaml), through each built-in's `validate_options` hook."""

from __future__ import annotations

import os

import pytest

import strategies
from strategies import StrategyContext
from conftest import SAMPLE_MEMORY, config_check, install_readme_plugin, read_records, run_cli, run_in_process


@pytest.mark.parametrize("sweep, override, expected", [
    ("none,core_retrieval", "strategy.options.top_k=abc", "option top_k='abc' must be an integer"),
    ("none,core_retrieval", "strategy.options.topk=3", "unknown option(s) ['topk']"),
    ("none,ace", "strategy.options.playbook_token_budget=-1", "playbook_token_budget must be >= 1"),
    # renamed (it caps the playbook; budget_tokens caps a delivery): the old name says the new one
    ("none,ace", "+strategy.options.token_budget=500", "option token_budget is now playbook_token_budget"),
    ("ace_online", "+strategy.options.token_budget=500", "option token_budget is now playbook_token_budget"),
    ("none,ace_online", "strategy.options.json_mode=xml", "json_mode='xml'; valid: schema, object, none"),
    # the same typo on every strategy: the one rule, with the known options named
    ("full", "+strategy.options.nope=1", "strategy 'full': unknown option(s) ['nope']; known: ['budget_tokens', 'frame']"),
    ("full", "strategy.options.top_k=5", "strategy 'full': unknown option(s) ['top_k']"),
    ("full", "strategy.options.budget_tokens=abc", "budget_tokens must be a positive integer or null"),
    ("full", "strategy.options.budget_tokens=0", "budget_tokens must be a positive integer or null, got 0"),
    ("none", "strategy.options.nope=1", "strategy 'none': unknown option(s) ['nope']; it takes no options"),
    ("ace", "strategy.options.nope=1", "strategy 'ace': unknown option(s) ['nope']"),
    ("ace_online", "strategy.options.nope=1", "strategy 'ace_online': unknown option(s) ['nope']"),
    ("none,full,core_retrieval", "strategy.options.nope=1", "unknown option(s) ['nope']"),
])
def test_bad_strategy_option_exits_2_at_the_config_check(sweep, override, expected, runs_dir, capsys):
    code, err = config_check(capsys, "model=oracle", f"strategy={sweep}", override, f"memory={SAMPLE_MEMORY}",
                             "benchmark.limit=1", "run_name=bad", runs_dir=runs_dir, multirun=True)
    assert code == 2, err[-2000:]
    assert "config error: strategy.options:" in err and expected in err
    assert err.strip().count("\n") == 0, err  # one line, no traceback
    assert not runs_dir.exists()


def test_the_cli_refuses_a_bad_option_in_one_line_before_anything_is_written(runs_dir):
    """The whole command line, as a user runs it: exit 2, one line, no run directory (not even Hydra's
    multirun.yaml)."""
    proc = run_in_process("model=oracle", "strategy=none,core_retrieval", "strategy.options.topk=3", f"memory={SAMPLE_MEMORY}",
                          "benchmark.limit=1", "run_name=bad", runs_dir=runs_dir, multirun=True)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "config error: strategy.options:" in proc.stderr and "unknown option(s) ['topk']" in proc.stderr
    assert proc.stderr.strip().count("\n") == 0, proc.stderr
    assert not runs_dir.exists()


def test_an_option_one_strategy_of_the_sweep_takes_reaches_only_that_one():
    sweep = ["none", "full", "core_retrieval"]
    strategies.validate_options("full", {"top_k": 0}, sweep)  # meant for core_retrieval
    strategies.validate_options("none", {"top_k": 0, "budget_tokens": 9}, sweep)
    with pytest.raises(ValueError, match=r"unknown option\(s\) \['top_k'\]: no strategy of this sweep \(none, full\) "
                                         r"takes it; full takes \['budget_tokens', 'frame'\]; none takes no options$"):
        strategies.validate_options("full", {"top_k": 0}, ["none", "full"])  # no strategy of this sweep takes it
    with pytest.raises(ValueError, match=r"unknown option\(s\) \['nope'\]"):
        strategies.validate_options("full", {"top_k": 0, "nope": 1}, sweep)
    built = strategies.create("full", StrategyContext(options={"top_k": 0, "budget_tokens": 50},
                                                      memory_path=str(SAMPLE_MEMORY)))
    assert built.options == {"budget_tokens": 50}  # the sweep's other options never reach it


def test_a_typo_in_a_sweep_names_who_takes_options_and_the_closest_key():
    """`STRATEGIES=none,full,core_retrieval ARGS="strategy.options.topk=5"`: not `none`'s fault."""
    with pytest.raises(ValueError) as exc:
        strategies.validate_options("none", {"topk": 5}, ["none", "full", "core_retrieval"])
    message = str(exc.value)
    assert message.startswith("unknown option(s) ['topk']: no strategy of this sweep (none, full, core_retrieval)")
    assert "full takes ['budget_tokens', 'frame']" in message and "'top_k'" in message.split("core_retrieval takes")[1]
    assert message.endswith("none takes no options; did you mean 'top_k'?")
    with pytest.raises(ValueError, match=r"^strategy 'core_retrieval': unknown option\(s\) \['topk'\]; known: .*"
                                         r"did you mean 'top_k'\?$"):
        strategies.validate_options("core_retrieval", {"topk": 5})


def test_validate_options_hook_accepts_the_shipped_defaults_and_checks_types():
    strategies.validate_options("core_retrieval", {"top_k": 0, "core_duplicate": 1, "embed_cache": None})
    strategies.validate_options("ace_online", {"dedup_threshold": None, "reflector_kwargs": {"temperature": 0}})
    strategies.validate_options("none", {})
    with pytest.raises(ValueError, match="takes no options"):
        strategies.validate_options("none", {"top_k": 0})
    with pytest.raises(ValueError, match="rerank_each_step='yes' must be a boolean"):
        strategies.validate_options("core_retrieval", {"rerank_each_step": "yes"})
    with pytest.raises(ValueError, match="core_support"):
        strategies.validate_options("core_retrieval", {"core_support": 0})
    with pytest.raises(ValueError, match="curator_kwargs='t=0' must be a mapping"):
        strategies.validate_options("ace_online", {"curator_kwargs": "t=0"})


@pytest.fixture
def readme_plugin(tmp_path):
    """strategies/README.md's example, installed as a plugin package (entry point) on PYTHONPATH: the runs that
    use it are processes of their own (run_cli), whose installed strategies are what a user's would be."""
    site = install_readme_plugin(tmp_path)
    return {"PYTHONPATH": os.pathsep.join([str(site), *filter(None, [os.environ.get("PYTHONPATH")])])}


def test_plugin_option_is_set_the_documented_way(readme_plugin, runs_dir):
    """`strategy.options.k=3` (README, no `+`) on a plugin without a YAML file runs and reaches the plugin."""
    proc = run_cli("model=oracle", "strategy=first_k", "strategy.options.k=3", f"memory={SAMPLE_MEMORY}",
                   "benchmark.limit=1", "run_name=ok", runs_dir=runs_dir, env=readme_plugin)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (record,) = read_records(runs_dir / "ok")
    assert record["strategy"] == "first_k" and {len(ids) for ids in record["delivered"]} == {3}


@pytest.mark.parametrize("override, expected", [
    ("strategy.options.kk=3", "strategy 'first_k': unknown option(s) ['kk']; known: ['k']"),  # its options' names
    ("strategy.options.k=0", "strategy 'first_k': option k must be a positive integer, got 0"),  # their bounds
])
def test_plugin_option_mistakes_exit_2(readme_plugin, override, expected, runs_dir):
    proc = run_cli("model=oracle", "strategy=first_k", override, f"memory={SAMPLE_MEMORY}", "run_name=bad",
                   runs_dir=runs_dir, env=readme_plugin)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert expected in proc.stderr and proc.stderr.strip().count("\n") == 0, proc.stderr
    assert not runs_dir.exists()
