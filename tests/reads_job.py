"""Subprocess body for tests/test_row.py: `python -m harness.run` in this process, counting what a job must do
once: the reads of results.jsonl, the benchmark's validate() and the memory provenance check.

argv: the CLI's arguments. Prints one JSON line {"reads": n, "validates": n, "provenance": n} after the sweep.
"""

from __future__ import annotations

import builtins
import io
import json
import runpy
import sys

import harness.runner.job as job_module
from harness.benchmarks.tau2.adapter import Tau2Benchmark

counts = {"reads": 0, "validates": 0, "provenance": 0}
_open = io.open


def counting_open(file, mode="r", *args, **kwargs):
    if str(file).endswith("results.jsonl") and "r" in mode and "+" not in mode:
        counts["reads"] += 1
    return _open(file, mode, *args, **kwargs)


io.open = builtins.open = counting_open
_validate, _provenance = Tau2Benchmark.validate, job_module.job_provenance


def validate(self):
    counts["validates"] += 1
    return _validate(self)


def provenance(*args, **kwargs):
    counts["provenance"] += 1
    return _provenance(*args, **kwargs)


Tau2Benchmark.validate, job_module.job_provenance = validate, provenance
sys.argv = ["harness.run", *sys.argv[1:]]
try:
    runpy.run_module("harness.run", run_name="__main__", alter_sys=True)  # as `python -m harness.run` does
except SystemExit as exc:
    if exc.code:
        raise
print(json.dumps(counts))
