"""τ²-bench (tau2): the only package that imports tau2. `adapter.Tau2Benchmark` is the Benchmark; the other
modules are its parts, among them agent (the memory agents), react (the ReAct turn), user (the ledgered user
simulator), data (task sets), fresh_db (the domain databases, read once per process), judge (the NL-assertion
judge), results (trajectory files and error labels) and runtime (tau2's process set-up)."""

from harness.benchmarks.tau2.runtime import quiet_tau2_logs

quiet_tau2_logs()  # before any module of this package imports tau2, which logs at import
