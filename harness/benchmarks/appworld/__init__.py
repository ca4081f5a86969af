"""AppWorld: `adapter.AppWorldBenchmark` is the Benchmark; `agent` is the ReAct code agent, `pool` drives the
engine workers, and `worker.py` runs inside .venv-appworld (never imported from .venv)."""
