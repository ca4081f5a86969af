"""Benchmark registry, fed by the `memdeliv.benchmarks` entry-point group.

The entry-point name is the config name (`benchmark=<name>`) and its value the adapter class, which
implements harness/benchmarks/protocol.py. The built-ins are declared in this repo's pyproject exactly as a
plugin package declares its own (tau2_retail, tau2_airline and tau2_telecom all name the τ² adapter), so
`pip install my-benchmark` is the whole plugin story. `register()` exists for tests and notebooks.
"""

from __future__ import annotations

from typing import Optional

from harness.assembly.options import AssemblyOptions
from harness.benchmarks.protocol import MEMBERS, Benchmark
from foundation.plugins import PluginRegistry
from harness.settings import BenchmarkSettings

GROUP = "memdeliv.benchmarks"


class UnknownBenchmark(ValueError):
    pass


_REGISTRY = PluginRegistry(GROUP, "benchmark", UnknownBenchmark)
register, available, adapter_class = _REGISTRY.register, _REGISTRY.available, _REGISTRY.load


def create(settings: BenchmarkSettings, assembly: Optional[AssemblyOptions] = None) -> Benchmark:
    """The adapter of `benchmark.name`, built from its settings; `assembly`: the job's request-assembly options,
    which its agents use (the defaults for a caller that runs no episode, e.g. memory building)."""
    adapter = adapter_class(settings.name)
    # checked on the class: an instance check would evaluate properties (τ²'s task_set hashes its data)
    missing = [m for m in MEMBERS if not hasattr(adapter, m)]
    if missing:
        raise TypeError(f"benchmark {settings.name!r} ({adapter.__name__}) lacks {', '.join(missing)} of the "
                        "Benchmark protocol (harness/benchmarks/protocol.py): inherit BenchmarkBase for the optional "
                        "ones")
    bench: Benchmark = adapter(settings)
    if assembly is not None:
        bench.assembly = assembly
    return bench


def default_placement(name: str) -> str:
    """Where this benchmark's memory block goes by default (its adapter's `default_placement`)."""
    return str(adapter_class(name).default_placement)
