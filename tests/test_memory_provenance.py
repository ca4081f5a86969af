"""Memory provenance and online learning (issue 17 §4), with the SCRIPTED oracle agent (no language model):
- a sweep scored on tasks its memory learned from is refused (exit 2, overlap count named), or labelled
  IN-SAMPLE in the table with allow_in_sample=true; a hand-written artifact is labelled `unknown provenance`;
- ground truth is refused off the train split, and online learners see no labels without it;
- ace_online trials are independent learning streams."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import strategies
from ace_fakes import MODEL, install_scripted_roles
from conftest import REPO, SAMPLE_MEMORY, main_in_process, read_records, run_in_process
from harness.provenance import HELD_OUT, IN_SAMPLE, UNKNOWN, check_use
from memory_kit.memory_file import learned_from
from harness.run import ConfigError, check_job, compose_job
from harness.runner import run_job
from strategies import StrategyBase
from memory_kit.memory_file import load_memory, save_memory
from strategies.ace.playbook import load_playbook


def _learned_artifact(path: Path, task_ids: list[str], split: str = "train") -> Path:
    guidelines, _ = load_memory(SAMPLE_MEMORY)
    save_memory(path, guidelines, {"kind": "learned", "learned_from": learned_from(
        "tau2_retail", split, task_ids, "memdeliv-scripted/oracle", False)})
    return path


def _table(run_dir: Path) -> str:
    shown = main_in_process("analysis.table", str(run_dir))
    assert shown.returncode == 0, shown.stderr[-2000:]
    return shown.stdout


def test_in_sample_memory_is_refused_then_labelled(tmp_path):
    art = _learned_artifact(tmp_path / "learned.jsonl", ["0", "1", "7"])
    base = ["model=oracle", "strategy=full", "benchmark=tau2_retail", "benchmark.split=train",
            "benchmark.task_ids=['0','1','2']", f"memory={art}", "run_name=ins"]
    runs = tmp_path / "runs"
    refused = run_in_process(*base, runs_dir=runs)
    assert refused.returncode == 2, refused.stderr[-2000:]
    assert "learned from 2 of the tau2_retail tasks" in refused.stderr and "allow_in_sample=true" in refused.stderr
    assert not runs.exists()  # nothing written

    accepted = run_in_process(*base, "allow_in_sample=true", runs_dir=runs)
    assert accepted.returncode == 0, accepted.stderr[-2000:]
    assert {r["memory_provenance"] for r in read_records(runs / "ins")} == {IN_SAMPLE}
    assert "full [IN-SAMPLE]" in _table(runs / "ins")


def test_hand_written_memory_is_unknown_provenance_and_none_is_unlabelled(tmp_path):
    runs = tmp_path / "runs"
    done = run_in_process("strategy=none,full", "model=oracle", "benchmark=tau2_retail", "benchmark.limit=1",
                          f"memory={SAMPLE_MEMORY}", "run_name=sample", runs_dir=runs, multirun=True)
    assert done.returncode == 0, done.stderr[-2000:]
    labels = {r["strategy"]: r["memory_provenance"] for r in read_records(runs / "sample")}
    assert labels == {"none": None, "full": UNKNOWN}
    table = _table(runs / "sample")
    assert "full [unknown provenance]" in table and " none " in table and "none [" not in table


def test_held_out_memory_is_unlabelled_and_chains_count():
    meta = {"learned_from": {**learned_from("tau2_retail", "test", ["5"], "m", False),
                             "started_from": learned_from("tau2_retail", "train", ["0", "1"], "m", False)}}
    assert check_use(meta, "tau2_retail", ["2", "3"], allow_in_sample=False) == HELD_OUT
    assert check_use(meta, "tau2_airline", ["0", "5"], allow_in_sample=False) == HELD_OUT  # another benchmark
    assert check_use({}, "tau2_retail", ["0"], allow_in_sample=False) == UNKNOWN
    with pytest.raises(ValueError, match="learned from 2 of"):  # the starting artifact's tasks count too
        check_use(meta, "tau2_retail", ["1", "5", "9"], allow_in_sample=False)


def test_ground_truth_is_refused_outside_train():
    base = ["model=oracle", "strategy=ace_online", "strategy.options.allow_ground_truth=true",
            "benchmark=tau2_retail", "benchmark.limit=1"]
    with pytest.raises(ConfigError, match="refusing benchmark.split=test"):
        check_job(compose_job([*base, "benchmark.split=test"]))
    check_job(compose_job([*base, "benchmark.split=train"]))
    with pytest.raises(ConfigError, match="train split only"):  # the verdict deciding re-runs is a label too
        check_job(compose_job(["model=oracle", "strategy=ace_online", "benchmark=tau2_retail", "benchmark.limit=1",
                               "strategy.options.retry_without_ground_truth=true"]))


class LabelProbe(StrategyBase):
    """An online learner that keeps what it is given to learn from."""

    seen: list = []
    with_labels = False
    learns_online = True  # an old plugin's class-level declaration (strategies/compat.py reads it)

    def __init__(self) -> None:
        super().__init__(name="label_probe")

    def deliver(self, task, step):
        return strategies.EMPTY

    def update(self, trajectory):
        LabelProbe.seen.append((trajectory.reward, trajectory.success, trajectory.feedback))

    @classmethod
    def create(cls, ctx):
        return cls()

    @classmethod
    def uses_ground_truth(cls, options):
        return cls.with_labels


@pytest.mark.parametrize("with_labels", [False, True])
def test_labels_reach_an_online_learner_only_with_ground_truth(tmp_path, with_labels):
    strategies.register("label_probe", LabelProbe)
    LabelProbe.seen, LabelProbe.with_labels = [], with_labels
    cfg = compose_job(["model=oracle", "strategy=label_probe", "benchmark=tau2_retail", "benchmark.split=train",
                       "benchmark.limit=2", f"runs_dir={tmp_path}", "run_name=probe", "progress=false"])
    check_job(cfg)
    run_job(cfg)
    records = read_records(tmp_path / "probe")
    assert len(LabelProbe.seen) == 2 and all(r["reward"] == 1.0 for r in records)  # the oracle succeeds
    if with_labels:
        assert all(reward == 1.0 and success is True for reward, success, _ in LabelProbe.seen)
    else:
        assert LabelProbe.seen == [(None, None, "")] * 2
    if with_labels:  # and a learner that takes labels is refused on the test split
        with pytest.raises(ConfigError, match="refusing benchmark.split=test"):
            check_job(compose_job(["model=oracle", "strategy=label_probe", "benchmark=tau2_retail",
                                   "benchmark.limit=1"]))


def _ace_online(tmp_path: Path, run: str, trials: int) -> Path:
    roles = install_scripted_roles()
    for _ in range(trials):  # one ADD per update, the same two per stream, so streams can be compared
        for text in ("Look the order up first.", "Confirm before any change."):
            roles.queue("curator", {"operations": [{"type": "ADD", "section": "strategies", "content": text}]})
    # concurrency=1: the queued answers go to stream 0, then stream 1 (streams side by side would take them in
    # any order; that case has its own test, tests/test_online_streams.py)
    cfg = compose_job(["model=oracle", "strategy=ace_online", f"strategy.options.reflector_model={MODEL}",
                       f"strategy.options.curator_model={MODEL}", "strategy.options.dedup_threshold=null",
                       "benchmark=tau2_retail", "benchmark.limit=2", f"benchmark.trials={trials}",
                       f"runs_dir={tmp_path}", f"run_name={run}", "concurrency=1", "progress=false"])
    check_job(cfg)
    return Path(run_job(cfg)["run_dir"])


def test_ace_online_trials_are_independent_streams(tmp_path):
    single = _ace_online(tmp_path, "one", trials=1)
    multi = _ace_online(tmp_path, "two", trials=2)
    art_one, art_two = next((single / "memory").iterdir()), next((multi / "memory").iterdir())
    reference, _ = load_playbook(art_one / "playbook.jsonl")
    tasks = sorted({r["task_id"] for r in read_records(multi)})
    for stream in (art_two, art_two / "trial_1"):  # one playbook per stream, each as a one-trial run leaves it
        playbook, meta = load_playbook(stream / "playbook.jsonl")
        assert playbook == reference and len(playbook) == 2
        assert meta["learned_from"]["task_ids"] == tasks and meta["learned_from"]["split"] == "test"
        assert meta["learned_from"]["ground_truth"] is False
    assert meta["trial"] == 1 and sorted(meta["applied"]) == [f"{t}#1" for t in tasks]
    # trial 1 of the first task saw the initial (empty) playbook, not what trial 0 learned from that task
    records = {(r["task_id"], r["trial"]): r for r in read_records(multi)}
    first, second = [t for t in records if t[1] == 1][0], [t for t in records if t[1] == 1][1]
    assert records[first]["delivered"][0] == [] and len(records[second]["delivered"][0]) == 1
    history = [json.loads(line) for line in (art_two / "history.jsonl").read_text().splitlines()]
    assert [h["stream"] for h in history if h["event"] == "update"] == [0, 0, 1, 1]


def test_an_online_playbook_is_refused_on_the_tasks_it_learned_from(tmp_path):
    multi = _ace_online(tmp_path, "learn", trials=1)
    learned = next((multi / "memory").iterdir()) / "playbook.jsonl"
    with pytest.raises(ConfigError, match="learned from 2 of"):
        check_job(compose_job(["model=oracle", "strategy=ace", "benchmark=tau2_retail", "benchmark.limit=3",
                               f"memory={learned}"]))


def test_the_readme_says_why_the_sample_memorys_rows_read_unknown_provenance():
    """Every default and oracle sweep reads the hand-written sample (the Makefile's MEMORY default), which has no
    `learned_from`: its rows are marked, and the README says why where it shows those sweeps."""
    assert "learned_from" not in load_memory(SAMPLE_MEMORY)[1]
    assert f"strategies/samples/{SAMPLE_MEMORY.name}" in (REPO / "Makefile").read_text()
    readme = " ".join((REPO / "README.md").read_text().split())
    said = readme[readme.index("make sweep MODEL=oracle"):readme.index("## Reading the result")]
    assert f"`full [{UNKNOWN}]`" in said and f"hand-written sample `strategies/samples/{SAMPLE_MEMORY.name}`" in said
