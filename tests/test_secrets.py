"""A planted API key (environment and command line) appears nowhere under runs/ nor in the output."""

from __future__ import annotations

from conftest import run_cli

ENV_KEY = "sk-plantedEnvSecret0123456789"
CLI_KEY = "sk-plantedCliSecret9876543210"


def test_planted_keys_never_reach_run_dir_or_logs(runs_dir):
    # a process of its own (run_cli): its whole output is captured, loggers made at import included
    proc = run_cli("model=oracle", "strategy=none", "benchmark.limit=2", "run_name=secret",
                   "model.api_key_env=MEMDELIV_TEST_API_KEY", f"+model.kwargs.api_key={CLI_KEY}",
                   runs_dir=runs_dir, multirun=True, env={"MEMDELIV_TEST_API_KEY": ENV_KEY})
    assert proc.returncode == 0, proc.stderr[-3000:]
    files = [p for p in runs_dir.rglob("*") if p.is_file()]
    assert any(p.name == "results.jsonl" for p in files) and any(p.name == "multirun.yaml" for p in files)
    for path in files:
        text = path.read_text(errors="replace")
        assert ENV_KEY not in text and CLI_KEY not in text, path
    assert ENV_KEY not in proc.stdout + proc.stderr and CLI_KEY not in proc.stdout + proc.stderr
