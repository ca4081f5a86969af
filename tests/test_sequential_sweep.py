"""The sequential sweep's driver (harness/waves.py): waves, looks kept in looks.jsonl, resume after a kill. The
waves are written from the simulated world's planted draws (the same p and draw as its agent), so the driver's
own logic is what is tested: a kill mid-wave loses and duplicates no record, and the rerun takes the same looks
and reaches the same decision as an uninterrupted sweep. (The job loop's resume is tested in test_resume*.)"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from analysis import recommend, sequential_run
from harness import waves
from harness.run import compose_job
from harness.runner import resolve
from harness.scripted import simulated_world as world
from harness.store import RunStore
from strategies import render_guidelines
from memory_kit.memory_file import load_memory


def overrides(artifact: Path, runs: Path, run: str) -> list[str]:
    return ["model=simulated", "model.profile=small", f"model.world={artifact}", f"memory={artifact}",
            "strategy=none,full", "benchmark.limit=40", "benchmark.trials=4", "sequential.until=decided",
            f"runs_dir={runs}", f"run_name={run}", "progress=false"]


class FakeWaves:
    """Writes a wave's records as the job loop would (skipping what is recorded), or half of them and a torn line
    on the wave `kill_at` (a kill mid-wave; exit 130)."""

    def __init__(self, artifact: Path, kill_at: int | None = None, budget_at: int | None = None):
        guidelines, _ = load_memory(artifact)
        self.blocks = {"none": "", "full": render_guidelines(guidelines)}
        self.world, self.kill_at, self.budget_at, self.calls = world.load_world(artifact), kill_at, budget_at, 0

    def __call__(self, base: list[str], running: tuple[str, ...], n: int) -> int:
        self.calls += 1
        settings = compose_job([o for o in base if not o.startswith("strategy=")] + ["strategy=none",
                                                                                      f"benchmark.limit={n}"])
        job = resolve(settings)
        store = RunStore(job.run_dir)
        done = {(r.strategy, r.task_id, r.trial) for r in store.read()}  # cuts a torn last line, as a resume does
        tasks = [str(t.id) for t in job.adapter().tasks()]
        rows = []
        for s in running:
            per_task = {t: self.blocks[s] for t in tasks}
            for r in world.simulate_records(world.PROFILES["small"], self.world, {s: per_task}, list(job.seeds),
                                            model=settings.model.name, benchmark="tau2_retail", run=job.run_dir.name):
                if (s, r["task_id"], r["trial"]) not in done:
                    rows.append({**r, "prompt_tokens": 2000 + r["memory_tokens"], "completion_tokens": 100})
        killed = self.calls == self.kill_at
        if killed or self.calls == self.budget_at:
            rows = rows[: len(rows) // 2]
        if self.calls == self.budget_at:  # the job loop's budget stop: the episodes so far recorded, exit 0
            (store.root / "manifest.json").write_text(json.dumps({"jobs": {"j": {"stopped": {"reason": "budget"}}}}))
        with open(store.results_path, "a") as fh:
            fh.write("".join(json.dumps(r) + "\n" for r in rows) + ('{"torn": ' if killed else ""))
        return 130 if killed else 0


@pytest.fixture
def sweep(artifact, tmp_path, monkeypatch):
    def run(name: str, fake: FakeWaves) -> int:
        monkeypatch.setattr(waves, "run_wave", fake)
        return waves.main(overrides(artifact, tmp_path, name))
    return run


def test_a_killed_sweep_resumes_at_its_wave_with_the_same_looks_and_decision(sweep, artifact, tmp_path, capsys):
    assert sweep("whole", FakeWaves(artifact)) == 0
    assert sweep("killed", FakeWaves(artifact, kill_at=2)) == 130  # killed in wave 2: no look taken for it
    assert len(RunStore(tmp_path / "killed").read_looks()) == 2  # the design and look 1
    assert sweep("killed", FakeWaves(artifact)) == 0
    whole, killed = (RunStore(tmp_path / r).read_looks() for r in ("whole", "killed"))
    assert whole == killed and len(whole) >= 3
    assert whole[-1]["choice"] == "none" and whole[-1]["tasks"] < 40  # small: none, before the pool is spent
    keys = [(r.strategy, r.task_id, r.trial) for r in RunStore(tmp_path / "killed").read()]
    assert Counter(keys).most_common(1)[0][1] == 1  # no record twice
    assert sorted(keys) == sorted((r.strategy, r.task_id, r.trial) for r in RunStore(tmp_path / "whole").read())
    calls = FakeWaves(artifact)
    assert sweep("killed", calls) == 0 and calls.calls == 0  # a finished sweep runs nothing and re-decides nothing
    assert RunStore(tmp_path / "killed").read_looks() == killed
    out = capsys.readouterr().out
    assert "Recommended: none" in out and "Episodes:" in out and "the fixed design: 320" in out


def test_a_budget_stopped_sweep_goes_on_when_rerun(sweep, artifact, tmp_path, capsys):
    assert sweep("budget", FakeWaves(artifact, budget_at=2)) == 0
    looks = RunStore(tmp_path / "budget").read_looks()
    assert looks[-1]["stop"] == "budget" and looks[-1]["tasks"] < 20  # half of wave 2 ran
    assert "the budget is spent" in capsys.readouterr().out
    (tmp_path / "budget" / "manifest.json").unlink()  # a higher budget: the rerun goes on at the next wave
    assert sweep("budget", FakeWaves(artifact)) == 0
    after = RunStore(tmp_path / "budget").read_looks()
    assert after[: len(looks)] == looks and after[-1]["stop"] in ("decided", "pool") and len(after) > len(looks)


def test_recommend_on_a_sequential_run_names_its_boundary(sweep, artifact, tmp_path, capsys):
    assert sweep("seq", FakeWaves(artifact)) == 0
    capsys.readouterr()
    assert recommend.main([str(tmp_path / "seq")]) == 0
    out = capsys.readouterr().out
    assert sequential_run.BOUNDARY in out and "not the fixed-size test" in out and "Recommended: none" in out
    assert "stopped at look" in out
    labels = sequential_run.stopped_early(tmp_path / "seq")
    assert set(labels) == {"none", "full"}  # full dropped or stopped with the sweep, both before the pool's end


def test_an_online_learners_stream_is_its_waves_in_turn(artifact):
    import stream_roles

    def order(limit: int, *extra: str) -> list[str]:
        job = resolve(compose_job(stream_roles.job(artifact, artifact.parent, "o", "benchmark.orders=2",
                                                   "benchmark.trials=1", f"benchmark.limit={limit}", *extra)))
        return [str(t.id) for t in job.task_order(job.adapter().tasks(), 1)]  # trial 1: order 1, permuted

    seq = ("sequential.until=decided", "sequential.wave=5")
    assert order(10, *seq)[:5] == order(5, *seq)  # the stream of two waves starts with the first wave's
    assert order(10, *seq) != order(10)  # a fixed sweep permutes the whole pool, as before


@pytest.mark.parametrize("bad", ["sequential.until=sometimes", "sequential.wave=0", "sequential.delta=-1"])
def test_a_bad_sequential_key_is_one_line_and_exit_2(bad, capsys):
    from harness.run import checked_command

    with pytest.raises(SystemExit) as exc:
        checked_command(["-m", "model=oracle", "strategy=none,full", "benchmark.limit=2", bad])
    assert exc.value.code == 2 and "sequential." in capsys.readouterr().err
