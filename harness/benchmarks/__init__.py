"""Benchmark adapters, by config name (harness/benchmarks/registry.py). Each adapter module is the only code
that imports its benchmark; all of them implement harness/benchmarks/protocol.py."""

from __future__ import annotations

from harness.benchmarks.protocol import Benchmark, BenchmarkBase
from harness.benchmarks.registry import (UnknownBenchmark, adapter_class, available, create, default_placement,
                                         register)

__all__ = ["Benchmark", "BenchmarkBase", "UnknownBenchmark", "adapter_class", "available", "create",
           "default_placement", "register"]
