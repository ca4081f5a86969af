"""Jobs of one sweep in parallel processes (Hydra's joblib launcher) share one results.jsonl safely."""

from __future__ import annotations

from collections import Counter

from conftest import SAMPLE_MEMORY, read_records, run_cli


def test_joblib_launcher_jobs_append_to_one_run(runs_dir):
    # the CLI as a process (run_cli): the launcher starts its jobs' processes from it, as from a user's shell
    proc = run_cli("hydra/launcher=joblib", "hydra.launcher.n_jobs=2", "model=oracle", "strategy=none,full",
                   f"memory={SAMPLE_MEMORY}", "benchmark.limit=3", "run_name=par", runs_dir=runs_dir, multirun=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    records = read_records(runs_dir / "par")  # every line parses: no interleaved writes
    assert Counter(r["strategy"] for r in records) == {"none": 3, "full": 3}
    failed = [(r["strategy"], r["task_id"], r["error"], r.get("error_detail")) for r in records
              if r["error"] is not None or not r["success"]]
    assert not failed, failed
