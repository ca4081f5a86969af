"""Runner overhead and concurrency, measured side by side in one run.

1. Our runner (MemoryAgent + ledger + store, concurrency 1) vs tau2's own `run_task` (its LLMAgent and
   orchestrator) replaying the same oracle tasks. Target: ratio <= 1.0.
2. CONCURRENCY=8 vs 1 with a scripted model that sleeps a fixed latency per call. Target: >= 0.85 x 8.
   One task run as N trials, so every episode has the same length and the figure measures the runner,
   not how unevenly different tasks fill 8 slots (with 16 different retail tasks that alone caps it ~5.9x).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from harness.benchmarks.tau2.adapter import Tau2Benchmark
from harness.run import compose_job
from harness.runner import resolve, run_job
from harness.serving.providers import serve


def tau2_replay(n: int, bench: Tau2Benchmark, domain: str) -> float:
    """tau2's own path for the same episodes, including what `tau2 run` does once per run (load the tasks,
    build the run Info), as our runner does once per job."""
    from tau2.run import get_info, get_tasks, run_task

    started = time.perf_counter()
    tasks = get_tasks(domain, "test", num_tasks=n)
    get_info(domain=domain, agent="llm_agent", user="user_simulator", llm_agent="memdeliv-scripted/oracle",
             llm_args_agent={}, llm_user="memdeliv-scripted/oracle", llm_args_user={})
    for task in tasks:
        script = bench.oracle_script(task)
        rewards = run_task(domain=domain, task=task, agent="llm_agent", user="user_simulator",
                           llm_agent="memdeliv-scripted/oracle", llm_user="memdeliv-scripted/oracle",
                           llm_args_agent={"metadata": {"role": "agent", "script": script}},
                           llm_args_user={"metadata": {"role": "user", "script": script}}, seed=1)
        assert rewards.reward_info.reward == 1.0, task.id
    return time.perf_counter() - started


def ours(runs: Path, name: str, *overrides: str) -> float:
    cfg = compose_job(["model=oracle", "progress=false", f"runs_dir={runs}", f"run_name={name}", *overrides])
    started = time.perf_counter()
    summary = run_job(resolve(cfg))
    assert summary["infra_errors"] == 0
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tasks", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=2)
    # a realistic API call; CPU per task ~0.75 s (tau2 evaluator)
    parser.add_argument("--latency", type=float, default=1.0)
    parser.add_argument("--conc-trials", type=int, default=16)
    parser.add_argument("--only", choices=("overhead", "concurrency"), help="run one of the two figures")
    parser.add_argument("--file-db", action="store_true",
                        help="our episodes read every τ² database from its file, as tau2's run_task does "
                             "(harness/benchmarks/tau2/fresh_db.py off): the runner's own overhead alone")
    args = parser.parse_args()
    if args.file_db:
        from harness.benchmarks.tau2 import fresh_db

        fresh_db.enabled = False
    runs = Path(tempfile.mkdtemp(prefix="memdeliv-bench-"))
    cfg = compose_job(["model=oracle", f"benchmark.limit={args.tasks}"])
    serve(cfg.model.name)  # tau2's own run_task below calls the oracle outside any job
    bench = resolve(cfg).adapter()  # the job's adapter, built as every job builds it
    assert isinstance(bench, Tau2Benchmark)
    tasks = bench.tasks()
    tau2_replay(1, bench, "retail")  # warm both paths once
    ours(runs, "warm", "benchmark.limit=1", "concurrency=1")

    if args.only != "concurrency":
        overhead(args, runs, bench, tasks)
    if args.only != "overhead":
        concurrency(args, runs, tasks)


def overhead(args, runs: Path, bench: Tau2Benchmark, tasks) -> None:
    theirs_s, ours_s = [], []
    for i in range(args.repeats):  # interleaved, so drift hits both sides alike
        theirs_s.append(tau2_replay(args.tasks, bench, "retail"))
        ours_s.append(ours(runs, f"ovh{i}", f"benchmark.limit={args.tasks}", "concurrency=1"))
    ratio = min(ours_s) / min(theirs_s)
    paired = sorted(o / t for o, t in zip(ours_s, theirs_s))
    print(f"overhead: {args.tasks} retail oracle tasks, best of {args.repeats}: "
          f"memdeliv runner{' (databases from file)' if args.file_db else ''} {min(ours_s):.2f}s vs tau2 run_task "
          f"{min(theirs_s):.2f}s -> ratio {ratio:.3f} "
          f"(target <= 1.0); paired ratios {', '.join(f'{r:.3f}' for r in paired)}")


def concurrency(args, runs: Path, tasks) -> None:

    same = [f"+model.kwargs.metadata.latency_s={args.latency}", f"benchmark.task_ids=[{tasks[0].id}]",
            f"benchmark.trials={args.conc_trials}"]
    one = ours(runs, "c1", "concurrency=1", *same)
    eight = ours(runs, "c8", "concurrency=8", *same)
    print(f"concurrency: task {tasks[0].id} x {args.conc_trials} trials, {args.latency * 1000:.0f} ms per model call: "
          f"1 -> {one:.1f}s, 8 -> {eight:.1f}s, speed-up {one / eight:.2f}x (target >= {0.85 * 8:.1f}x)")


if __name__ == "__main__":
    main()
