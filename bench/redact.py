"""Redaction cost per record and per trajectory: the compiled redactor vs the per-string env scan it replaced.

`.venv/bin/python bench/redact.py [RUN_DIR]` runs 10 oracle tasks with `full` memory into a temporary run
(or reads RUN_DIR), then times redacting each of its records (`harness.store.redact`, as `append` does) and
each trajectory file's text (`redact_text`, as the benchmarks do), with the process environment padded to
`--env` variables (a developer shell holds ~100). The old implementation is kept below only as the baseline.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)]  # this checkout's harness, not whichever one is installed
SAMPLE_MEMORY = ROOT / "strategies" / "samples" / "tau2_sample.jsonl"

from harness.row import RESULTS, read_rows  # noqa: E402
from harness.secrets import redact_text  # noqa: E402
from harness.store import redact  # noqa: E402

# --- baseline: harness/store/run_store.py before the compiled redactor (every env var scanned for every string) ----
_OLD_KEY = re.compile(r"(api[_-]?key|secret|password|passwd|authorization|access[_-]?token|auth[_-]?token|bearer)",
                      re.I)
_OLD_ENV = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD)", re.I)
_OLD_VALUE = re.compile(r"\b(sk-[A-Za-z0-9_\-]{8,}|AKIA[0-9A-Z]{12,}|hf_[A-Za-z0-9]{8,})")


def old_redact(value: Any, key: str = "") -> Any:
    if isinstance(value, dict):
        return {k: old_redact(v, str(k)) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [old_redact(v, key) for v in value]
    if isinstance(value, str):
        if key and _OLD_KEY.search(key) and not key.endswith("_env"):
            return "***REDACTED***" if value else value
        return old_redact_text(value)
    return value


def old_redact_text(text: str) -> str:
    for name, secret in os.environ.items():
        if secret and len(secret) >= 8 and _OLD_ENV.search(name) and secret in text:
            text = text.replace(secret, "***REDACTED***")
    return _OLD_VALUE.sub("***REDACTED***", text)


def make_run() -> Path:
    from harness.run import compose_job
    from harness.runner import resolve, run_job

    runs = Path(tempfile.mkdtemp(prefix="memdeliv-redact-"))
    cfg = compose_job(["model=oracle", "strategy=full", f"memory={SAMPLE_MEMORY}", "benchmark.limit=10",
                       "progress=false", f"runs_dir={runs}", "run_name=r"])
    return Path(run_job(resolve(cfg))["run_dir"])


def per_call_us(fn: Any, items: list[Any], repeat: int) -> float:
    best = []
    for _ in range(repeat):
        t = time.perf_counter()
        for item in items:
            fn(item)
        best.append((time.perf_counter() - t) / len(items))
    return min(best) * 1e6  # the least disturbed repeat: the machine may be shared


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_dir", nargs="?")
    ap.add_argument("--env", type=int, default=100, help="pad the environment to this many variables")
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    run_dir = Path(args.run_dir) if args.run_dir else make_run()
    records = [row.columns() for _, row in read_rows(run_dir / RESULTS)]  # the harness's one reader
    texts = [p.read_text() for p in sorted((run_dir / "trajectories").rglob("*.json"))]
    for i in range(max(0, args.env - len(os.environ))):  # ordinary variables, a few with secret-looking names
        os.environ[f"MEMDELIV_BENCH_{'API_KEY' if i % 20 == 0 else 'VAR'}_{i}"] = f"value-{i:04d}-{'x' * (i % 40)}"
    assert old_redact(records[0]) == redact(records[0]) and all(old_redact_text(t) == redact_text(t) for t in texts)
    rec_old = per_call_us(old_redact, records, args.repeat)
    rec_new = per_call_us(redact, records, args.repeat)
    tr_old = per_call_us(old_redact_text, texts, args.repeat)
    tr_new = per_call_us(redact_text, texts, args.repeat)
    size = statistics.mean(len(json.dumps(r)) for r in records)
    print(f"{len(records)} records (mean {size / 1024:.1f} KiB), {len(texts)} trajectories "
          f"(mean {statistics.mean(map(len, texts)) / 1024:.1f} KiB), {len(os.environ)} env variables")
    print(f"record     : before {rec_old:9.1f} us   after {rec_new:8.1f} us   speed-up {rec_old / rec_new:6.1f}x")
    print(f"trajectory : before {tr_old:9.1f} us   after {tr_new:8.1f} us   speed-up {tr_old / tr_new:6.1f}x")


if __name__ == "__main__":
    main()
