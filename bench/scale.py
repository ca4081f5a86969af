"""Scale-out, measured side by side in one run (docs/scaling.md has the figures).

1. threads: concurrency 8 vs 1, with the scripted oracle sleeping a fixed latency per model call (an API-bound
   sweep). One task run as N trials, so every episode has the same length and the figure measures the runner
   (bench/overhead.py explains why). Target: >= 6.8x (0.85 x 8), whatever the entry (`python bench/scale.py`
   or `python -m bench.scale`). Concurrency 8 is timed twice: with every environment's database read from its
   file, as tau2 does (the old way: ~0.5 s of CPU per episode under the GIL), and from fresh_db.py (the default).
2. Ray: 2 worker processes (executor=ray, a local Ray with 2 CPUs) vs one process (threads, concurrency 1) on
   CPU-bound oracle episodes (no latency: tau2's orchestrator and evaluator are the work). Target: >= 1.8x on
   2 cores. Ray is started and its workers warmed (imports, first job) before the clock starts, as they stay
   up across the jobs of a sweep.

The machine's load is printed before and after: on a shared machine the figures are only as good as it is idle.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from harness.runner import ray_executor
from harness.benchmarks.tau2 import fresh_db
from harness.run import compose_job
from harness.runner import resolve, run_job
from harness.serving.providers import serve


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.2f} (1 min) {five:.2f} (5 min) on {os.cpu_count()} CPUs"


def timed(runs: Path, name: str, *overrides: str) -> float:
    cfg = compose_job(["model=oracle", "progress=false", f"runs_dir={runs}", f"run_name={name}", *overrides])
    started = time.perf_counter()
    summary = run_job(resolve(cfg))
    assert summary["infra_errors"] == 0 and summary["ran"] > 0, summary
    return time.perf_counter() - started


def threads_figure(args, runs: Path, task_id: str) -> None:
    same = [f"+model.kwargs.metadata.latency_s={args.latency}", f"benchmark.task_ids=[{task_id}]",
            f"benchmark.trials={args.trials}"]
    one = timed(runs, "t1", "concurrency=1", *same)
    fresh_db.enabled = False
    try:
        old = timed(runs, "t8-old", "concurrency=8", *same)
    finally:
        fresh_db.enabled = True
    eight = timed(runs, "t8", "concurrency=8", *same)
    entry = "python -m bench.scale" if __spec__ is not None else "python bench/scale.py"
    print(f"threads ({entry}): task {task_id} x {args.trials} trials, {args.latency * 1000:.0f} ms per model call: "
          f"concurrency 1 -> {one:.1f}s; 8 with databases read from their files (old) -> {old:.1f}s, "
          f"speed-up {one / old:.2f}x; 8 with fresh_db (new) -> {eight:.1f}s, speed-up {one / eight:.2f}x "
          f"(target >= 6.8x)", flush=True)
    if args.ray_latency:  # the same sweep with 8 episodes in flight as Ray tasks: their CPU spreads over processes
        ray_args = ["executor=ray", "executor.num_cpus=2", "executor.cpus_per_episode=0.25"]
        ray_executor.ray_up(compose_job(ray_args).executor)
        try:
            timed(runs, "warm8", *ray_args, "benchmark.limit=8")
            ray8 = timed(runs, "r8", *ray_args, *same)
        finally:
            ray_executor.ray_down()
        print(f"  same sweep, executor=ray with 8 in flight (cpus_per_episode=0.25 on 2 CPUs): {ray8:.1f}s, "
              f"speed-up {one / ray8:.2f}x over threads concurrency 1", flush=True)


def ray_figure(args, runs: Path) -> None:
    ray_args = ["executor=ray", "executor.num_cpus=2"]
    ray_executor.ray_up(compose_job(["executor=ray", "executor.num_cpus=2"]).executor)
    try:
        timed(runs, "warm", *ray_args, "benchmark.limit=4")  # both workers import tau2 and build a job once
        same = [f"benchmark.limit={args.tasks}"]
        one = timed(runs, "p1", "concurrency=1", *same)
        two = timed(runs, "r2", *ray_args, *same)
    finally:
        ray_executor.ray_down()
    print(f"ray: {args.tasks} retail oracle tasks, CPU-bound (no model latency): one process -> {one:.1f}s, "
          f"Ray 2 workers -> {two:.1f}s, speed-up {one / two:.2f}x (target >= 1.8x on 2 cores)", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--latency", type=float, default=1.0)
    parser.add_argument("--trials", type=int, default=16)
    parser.add_argument("--tasks", type=int, default=16)
    parser.add_argument("--only", choices=("threads", "ray"), help="measure one of the two figures")
    parser.add_argument("--ray-latency", action="store_true",
                        help="also run the latency sweep on Ray with 8 episodes in flight")
    args = parser.parse_args()
    serve(compose_job(["model=oracle"]).model.name)
    runs = Path(tempfile.mkdtemp(prefix="memdeliv-scale-"))
    task_id = resolve(compose_job(["model=oracle"])).adapter().tasks()[0].id
    timed(runs, "warm-threads", "benchmark.limit=1", "concurrency=1")  # imports and caches, off the clock
    print(f"before: {load()}", flush=True)
    if args.only != "ray":
        threads_figure(args, runs, task_id)
    if args.only != "threads":
        ray_figure(args, runs)
    print(f"after: {load()}", flush=True)


if __name__ == "__main__":
    main()
