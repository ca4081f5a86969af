"""`python -m harness.waves key=value ...` (`make sweep ... UNTIL=decided [WAVE=10] [DELTA=5]`): a sweep that stops
when the answer is known (docs/deciding.md "Stopping early").

The strategies run in waves of `sequential.wave` new tasks (every strategy still running on the same tasks, every
trial: `benchmark.limit` grows by a wave and the job loop's resume skips what is recorded), and after each wave
the run's records are looked at by the sequential boundary (analysis/statistics/sequential.py): a strategy shown
more than DELTA below another is dropped from later waves; the sweep stops when one is shown non-inferior to every
other still running, when no strategy can be shown within the pool (`benchmark.limit`, else the split), or when
the pool or the budget (`budget_usd`) is spent. Each look is appended to the run's looks.jsonl by the store
before the next wave starts; a killed sweep rerun with the same RUN continues at its next wave and never takes an
earlier look again. A learner's stream (an online strategy) is the concatenation of its waves.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd

from analysis import load_records, sequential_run
from analysis.statistics.sequential import Design
from foundation.terminal import wrap
from harness.run import checked_command, compose_job, exit_status, expand_sweeps, fail, main as run_main
from harness.runner import resolve
from harness.settings import JobSettings
from harness.store import RunStore


def main(argv: list[str] | None = None) -> int:
    _, overrides = checked_command(["-m", *(sys.argv[1:] if argv is None else argv)])  # exit 2 on bad input
    jobs = [compose_job(job) for job in expand_sweeps(overrides)]
    first = jobs[0]
    cells = {(s.model.name, s.benchmark.name, s.benchmark.split, s.benchmark.trials) for s in jobs}
    if len(cells) > 1 or len({s.strategy.name for s in jobs}) != len(jobs):
        fail("sequential.until=decided decides one cell: one model, benchmark, split and trials, each strategy once")
    seq = dict(first.sequential)
    wave, delta = int(seq.get("wave", 10)), float(seq.get("delta", 5.0))
    pool = len(resolve(first).adapter().tasks())  # benchmark.limit, or the whole split
    design = Design(tuple(s.strategy.name for s in jobs), pool, delta / 100, first.benchmark.trials)
    store = RunStore(Path(first.runs_dir) / str(first.run_name))
    docs = store.read_looks()
    planned = sequential_run.design_json(design, wave, delta)
    if docs and docs[0] != json.loads(json.dumps(planned)):
        fail(f"run {first.run_name!r} holds a sequential sweep of another design ({docs[0]['design']}); use a new RUN=")
    if not docs:
        store.append_look(planned)
    history = [sequential_run.look_of(d) for d in docs[1:]]
    base = [o for o in overrides if o.split("=", 1)[0] not in ("strategy", "benchmark.limit")]
    while not (history and history[-1].stop not in (None, "budget")):  # a budget's stop goes on when rerun
        running = history[-1].still if history else design.strategies
        n = min(pool, (len(history) + 1) * wave)
        resumed_at_budget = bool(history) and history[-1].stop == "budget"
        before = len(_records(store.root, first)) if resumed_at_budget else 0  # read only where it is compared
        try:
            rc = run_wave(base, running, n)
        except KeyboardInterrupt:  # Ctrl-C reaches the wave's jobs too: what they recorded stays
            rc = 130
        records = _records(store.root, first)
        if resumed_at_budget and len(records) == before:
            print(wrap(f"memdeliv: the budget is still spent: nothing ran at wave {len(history) + 1}; no look taken"),
                  file=sys.stderr)
            break
        complete = all(int((records["strategy"] == s).sum()) >= n * first.benchmark.trials for s in running)
        if rc != 0 and not (complete or _budget_spent(store.root)):
            print(wrap(f"memdeliv: wave {len(history) + 1} did not finish (exit {rc}); no look taken. Rerun with "
                       f"RUN={first.run_name} to go on at this wave."), file=sys.stderr)
            return rc
        last = "budget" if not complete else "pool" if n >= pool else None
        look = sequential_run.take(records, design, history, last)
        store.append_look(sequential_run.look_json(look))
        history.append(look)
        print(wrap("memdeliv: " + sequential_run.look_line(look, sequential_run.trials_text(design.blocks))),
              flush=True)
        if look.stop:  # a budget's stop too: the rerun goes on
            break
    ran = sequential_run.episodes(_records(store.root, first), design)
    print("\n" + "\n".join(wrap(line) for line in sequential_run.lines(design, wave, delta, history, ran)))
    return 0


def run_wave(overrides: list[str], running: tuple[str, ...], tasks: int) -> int:
    """One wave: the sweep's jobs for the strategies still running on the pool's first `tasks` tasks (what is
    recorded already is skipped by the job loop's resume); its exit status."""
    return exit_status(run_main, ["-m", *overrides, f"strategy={','.join(running)}", f"benchmark.limit={tasks}"])


def _records(run_dir: Path, s: JobSettings) -> pd.DataFrame:
    records = load_records([run_dir]) if (run_dir / "results.jsonl").is_file() else None
    if records is None or records.empty:
        return pd.DataFrame(columns=["model", "benchmark", "split", "strategy"])
    return records[(records["model"] == s.model.name) & (records["benchmark"] == s.benchmark.name)
                   & (records["split"] == s.benchmark.split)]


def _budget_spent(run_dir: Path) -> bool:
    manifest = Path(run_dir) / "manifest.json"
    jobs = json.loads(manifest.read_text()).get("jobs", {}) if manifest.is_file() else {}
    return any((job.get("stopped") or {}).get("reason") == "budget" for job in jobs.values())


if __name__ == "__main__":
    raise SystemExit(main())
