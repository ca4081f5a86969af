"""A provider that echoes the key in a 500 body: the key, under an env var whose name says nothing
(`model.api_key_env=LLMCRED`) and in no known key shape, must reach no file under runs/ and no output."""

from __future__ import annotations

import json

from conftest import compose, read_records, run_cli
from fault_server import FaultServer, scripts_for

KEY = "q9Zx7Lmn0pQ4rS8tUvW2yZ"  # a fake credential: no sk- prefix, no KEY/TOKEN/SECRET in the variable name


def test_key_echoed_in_a_provider_error_is_redacted_everywhere(runs_dir):
    scripts, scenarios = scripts_for(compose("model=oracle", "benchmark.limit=2"))
    with FaultServer(scripts, scenarios, schedule=["echo500"] * 2) as server:  # run_cli: every stream captured
        proc = run_cli("model=litellm", "model.name=openai/echo-agent", f"+model.kwargs.api_base={server.api_base}",
                       "model.api_key_env=LLMCRED", "model.max_retries=0", "benchmark.limit=2", "concurrency=1",
                       "run_name=echo", runs_dir=runs_dir, multirun=True, env={"LLMCRED": KEY})
        injected = server.injected()
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert injected == {"echo500": 2}  # the provider did echo the key, once per episode

    records = read_records(runs_dir / "echo")
    assert [r["error"] for r in records] == ["infra", "infra"]
    for r in records:  # the echo reached the record, with the key taken out
        assert "request auth was Bearer ***REDACTED*** (key ***REDACTED***)" in r["error_detail"]
    files = [p for p in runs_dir.rglob("*") if p.is_file()]
    names = {p.name for p in files}
    assert {"results.jsonl", "manifest.json", "config.yaml", "multirun.yaml"} <= names
    assert any(p.parent.name != "echo" and p.suffix == ".json" for p in files)  # trajectories were written too
    for path in files:
        assert KEY not in path.read_text(errors="replace"), path
    assert KEY not in proc.stdout + proc.stderr
    config = (runs_dir / "echo" / "config.yaml").read_text()
    assert "api_key_env: LLMCRED" in config
    manifest = json.loads((runs_dir / "echo" / "manifest.json").read_text())
    assert next(iter(manifest["jobs"].values()))["infra_errors"] == 2
