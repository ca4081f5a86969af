"""Issue 30's runner figures, measured in one run (docs/performance.md, docs/scaling.md, docs/cost.md,
docs/store.md have them):

1. streams: `ace_online`'s per-trial streams side by side vs one after another: the scripted oracle sleeping a
   fixed latency per model call (an API-bound agent) and the scripted ACE roles (memdeliv-scripted-ace), T trials
   of N tasks, concurrency T vs 1 (threads); `--ray` adds the same job on a local Ray with T slots (started, and
   its workers warmed by a one-task job, before the clock). The records (less timing) and every stream's
   playbook are checked equal to the serial run's.
2. ray-budget: budget_usd under executor=ray (a local Ray, 2 slots): the scripted oracle priced through
   model.price_per_mtok_*; a free run prices an episode, a capped run stops, a rerun with a higher cap resumes.
   Prints where it stopped, the overshoot in episodes (at most one wave: the slots), and what the rerun ran.
3. unreachable: a closed port on 127.0.0.1 with the model's default retries (3 retries, 2 s doubling backoff):
   the time until the job stops and the episodes it recorded, beside the same job with the stop turned off.

The machine's load is printed before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import sys
import tempfile
import time
from pathlib import Path
from unittest import mock

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from harness.row import RESULTS, read_rows
from harness.run import compose_job
from harness.runner import resolve, run_job
from harness.runner.budget import episode_cost
from harness.runner.reach import Reachability

TIMING = ("wall_s", "started_at", "model_seconds", "run")
PRICE = ["model.price_per_mtok_in=2", "model.price_per_mtok_out=8"]


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.2f} (1 min) {five:.2f} (5 min) on {os.cpu_count()} CPUs"


def job(runs: Path, name: str, *overrides: str) -> tuple[dict, float]:
    cfg = compose_job(["progress=false", f"runs_dir={runs}", f"run_name={name}", *overrides])
    started = time.perf_counter()
    summary = run_job(resolve(cfg))
    return summary, time.perf_counter() - started


def rows(run_dir: Path) -> dict:
    out = {}
    for _, row in read_rows(run_dir / RESULTS):  # the harness's one reader of results.jsonl
        record = row.columns()
        record["step_usage"] = [{k: v for k, v in s.items() if k != "latency_s"} for s in record["step_usage"]]
        out[(record["task_id"], record["trial"])] = {k: v for k, v in record.items() if k not in TIMING}
    return out


def playbooks(run_dir: Path) -> dict:
    out = {}
    for path in sorted((run_dir / "memory").rglob("playbook*.jsonl")):
        lines = path.read_text().splitlines()
        meta = json.loads(lines[0])
        meta["_meta"].pop("saved_at")
        out[str(path.relative_to(run_dir / "memory").as_posix().split("/", 1)[1])] = [meta, *lines[1:]]
    return out


def streams_figure(args, runs: Path) -> None:
    same = ["model=oracle", f"+model.kwargs.metadata.latency_s={args.latency}", "strategy=ace_online",
            "strategy.options.reflector_model=memdeliv-scripted-ace/roles",
            "strategy.options.curator_model=memdeliv-scripted-ace/roles", "strategy.options.dedup_threshold=null",
            f"benchmark.limit={args.tasks}", f"benchmark.trials={args.trials}"]
    serial, t1 = job(runs, "serial", *same, "concurrency=1")
    side, tn = job(runs, "parallel", *same, f"concurrency={args.trials}")
    same_out = rows(runs / "serial") == rows(runs / "parallel") and playbooks(runs / "serial") == playbooks(
        runs / "parallel")
    print(f"streams: ace_online, {args.tasks} tasks x {args.trials} trials, {args.latency * 1000:.0f} ms per model "
          f"call: one stream at a time ({serial['executor']}, concurrency 1) {t1:.1f}s; {args.trials} side by side "
          f"(concurrency {args.trials}) {tn:.1f}s = {t1 / tn:.2f}x; records and playbooks identical: {same_out}")
    if args.ray:
        ray = ["executor=ray", "executor.num_cpus=2", f"executor.cpus_per_episode={2 / args.trials}"]
        job(runs, "ray-warm", *same, *ray, "benchmark.limit=1")  # Ray up, its workers started: as within a sweep
        on_ray, tr = job(runs, "ray", *same, *ray)
        ray_same = rows(runs / "serial") == rows(runs / "ray") and playbooks(runs / "serial") == playbooks(runs / "ray")
        print(f"streams on Ray ({on_ray['executor']}, {args.trials} slots on 2 CPUs, Ray and its workers started "
              f"before the clock): {tr:.1f}s = {t1 / tr:.2f}x; records and playbooks identical: {ray_same}")


def budget_figure(args, runs: Path) -> None:
    ray = ["model=oracle", *PRICE, f"benchmark.limit={args.budget_tasks}", "executor=ray", "executor.num_cpus=2"]
    job(runs, "free", *ray)
    costs = [priced(r) for r in rows(runs / "free").values()]
    cap = args.cap_episodes * sum(costs) / len(costs)
    first, _ = job(runs, "capped", *ray, f"budget_usd={cap}")
    spent = sum(priced(r) for r in rows(runs / "capped").values())
    over = max(0.0, spent - cap) / (sum(costs) / len(costs))
    again, _ = job(runs, "capped", *ray, f"budget_usd={100 * cap}")
    print(f"ray-budget: {args.budget_tasks} retail tasks, mean ${sum(costs) / len(costs):.4f} per episode, cap "
          f"${cap:.4f} ({args.cap_episodes} mean episodes), 2 slots: stopped after {first['ran']} episodes at "
          f"${spent:.4f} ({over:.2f} mean episodes over the cap); rerun with a 100x cap ran {again['ran']}, "
          f"resumed past {again['skipped']}, total {len(rows(runs / 'capped'))} of {args.budget_tasks}")


def priced(row) -> float:
    cost = episode_cost(row)
    assert cost is not None, "the bench's model is priced from the config"
    return cost


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def unreachable_figure(args, runs: Path) -> None:
    os.environ["BENCH_UNREACH_KEY"] = "sk-bench-unreachable-0123456789"
    down = ["model=litellm", "model.name=openai/x", f"+model.kwargs.api_base=http://127.0.0.1:{closed_port()}/v1",
            "model.api_key_env=BENCH_UNREACH_KEY", f"benchmark.limit={args.down_tasks}", "concurrency=4"]
    started = time.perf_counter()
    summary, _ = job(runs, "stop", *down)
    reason = (summary.get("stopped") or {}).get("reason")
    stopped = "stopped (exit 2 from the CLI)" if reason == "provider_unreachable" else "not stopped"
    t_stop = time.perf_counter() - started
    n_stop = len(rows(runs / "stop"))
    # the behaviour before: every episode retried, then infra
    with mock.patch.object(Reachability, "see", lambda self, outcome: None):
        summary, t_all = job(runs, "all", *down)
    print(f"unreachable: closed port, {args.down_tasks} episodes, concurrency 4, default retries: {stopped} after "
          f"{t_stop:.1f}s with {n_stop} episodes recorded; without the stop {t_all:.1f}s and {summary['ran']} infra "
          f"episodes recorded")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", choices=("streams", "ray-budget", "unreachable"))
    parser.add_argument("--tasks", type=int, default=4)
    parser.add_argument("--trials", type=int, default=4)
    parser.add_argument("--latency", type=float, default=0.5)
    parser.add_argument("--ray", action="store_true", help="streams: the same job on a local Ray too")
    parser.add_argument("--budget-tasks", type=int, default=12)
    parser.add_argument("--cap-episodes", type=float, default=5.5)
    parser.add_argument("--down-tasks", type=int, default=12)
    args = parser.parse_args()
    runs = Path(tempfile.mkdtemp(prefix="memdeliv-bench-streams-"))
    print(f"before: {load()}")
    try:
        if args.only in (None, "streams"):
            streams_figure(args, runs)
        if args.only in (None, "ray-budget"):
            budget_figure(args, runs)
        if args.only in (None, "unreachable"):
            unreachable_figure(args, runs)
    finally:
        shutil.rmtree(runs, ignore_errors=True)
    print(f"after: {load()}")


if __name__ == "__main__":
    main()
