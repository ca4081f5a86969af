"""`harness.memory.build`: train split only, and the whole offline pipeline with the scripted oracle + reflector."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memory_kit.memory_file import load_memory
from harness.memory.build import BuildError, build, collect_overrides, load_trajectories, main
from scripted_reflector import MODEL as FAKE_REFLECTOR
from scripted_reflector import install as install_fake_reflector


@pytest.mark.parametrize("bad", ["benchmark.split=test", "benchmark.split=base", "strategy=full", "run_name=x",
                                 "memory=m.jsonl"])
def test_refuses_anything_but_a_train_collection(bad):
    with pytest.raises(BuildError):
        collect_overrides("n", ["model=oracle", bad])
    assert "benchmark.split=train" in collect_overrides("n", ["model=oracle", "benchmark.split=train"])


def test_cli_refuses_test_split_before_running_anything(tmp_path, capsys):
    assert main(["--name", "t", "--runs-dir", str(tmp_path), "--", "model=oracle", "benchmark.split=test"]) == 2
    assert "train split only" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("bad", [["--consolidation", "lossless", "--target", "3"], ["--target", "5"],
                                 ["--consolidation", "lossy", "--target", "0"]])
def test_cli_refuses_a_bad_lossy_target_before_running_anything(tmp_path, capsys, bad):
    assert main(["--name", "t", "--runs-dir", str(tmp_path), *bad, "--", "model=oracle"]) == 2
    assert "target" in capsys.readouterr().err and not any(tmp_path.iterdir())
    with pytest.raises(SystemExit) as exit_:  # an unknown mode: argparse's own error
        main(["--name", "t", "--runs-dir", str(tmp_path), "--consolidation", "lossier", "--", "model=oracle"])
    assert exit_.value.code == 2 and not any(tmp_path.iterdir())


def test_collect_extract_consolidate_offline(tmp_path):
    args = ["--name", "demo", "--runs-dir", str(tmp_path), "--", "model=oracle", "benchmark=tau2_retail",
            "benchmark.limit=3", "progress=false"]
    assert main(args) == 0
    run = tmp_path / "memory" / "demo"
    records = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
    assert len(records) == 3 and {r["split"] for r in records} == {"train"} and {r["strategy"] for r in records} == {"none"}

    guidelines, meta = load_memory(run / "memory.jsonl")
    extracted, _ = load_memory(run / "memory.extracted.jsonl")
    merges = [json.loads(line) for line in (run / "memory.merges.jsonl").read_text().splitlines()]
    assert meta["kind"] == "scripted-demo" and "NOT learned" in meta["note"] and meta["split"] == "train"
    learned = meta["learned_from"]  # provenance: checked against the tasks of every sweep that uses it
    assert learned["benchmark"] == "tau2_retail" and learned["split"] == "train" and learned["ground_truth"] is False
    assert learned["task_ids"] == sorted({r["task_id"] for r in records}, key=int)
    assert learned["model"] == records[0]["model"] and learned["task_set"]["domain"] == "retail"
    # every extracted guideline either survived or is recorded as merged into a survivor
    survivors = {g.id for g in guidelines}
    assert len(extracted) == len(guidelines) + len(merges)
    assert {m["into"] for m in merges} <= survivors and not {m["merged"] for m in merges} & survivors
    # support = distinct source tasks
    for g in guidelines:
        assert g.support == len(set(g.source_task_ids))
    report = json.loads((run / "build.json").read_text())
    assert report["trajectories"] == 3 and report["extractor_usage"]["calls"] >= 3
    assert meta["consolidation"] == "lossless" and meta["merge_threshold_on"] == "source task texts"  # the default
    assert report["support_conserved"] == {"extracted": len(extracted), "attributed": len(extracted)}
    assert report["consolidation_usage"].get("calls", 0) == report["consolidation_llm_calls"]
    # text consolidation merges equal guideline texts whatever the task: the opening tool repeats in all 3 tasks
    text_summary = build(Path(run), tmp_path / "text.jsonl", consolidation="text")
    by_text, text_meta = load_memory(tmp_path / "text.jsonl")
    assert text_meta["consolidation"] == "text" and text_summary["consolidation_usage"].get("calls", 0) == text_summary["consolidation_llm_calls"]
    assert max(g.support for g in by_text) == len({r["task_id"] for r in records})
    # lossy towards 2 guidelines; the consolidator is the SCRIPTED reflector (it deals inputs into <= N outputs)
    lossy = build(Path(run), tmp_path / "lossy.jsonl", consolidation="lossy", target=2)
    by_lossy, lossy_meta = load_memory(tmp_path / "lossy.jsonl")
    assert lossy_meta["consolidation"] == "lossy" and lossy_meta["lossy_target"] == 2
    assert len(by_lossy) <= 2 < len(guidelines) and lossy["lossy_target_met"] is True
    assert lossy["support_conserved"] == {"extracted": len(extracted), "attributed": len(extracted)}
    assert {t for g in by_lossy for t in g.source_task_ids} == {r["task_id"] for r in records}  # no task lost
    assert all(g.support == len(set(g.source_task_ids)) for g in by_lossy)
    kept = build(Path(run), tmp_path / "none.jsonl", consolidation="none")
    assert kept["guidelines"] == len(extracted) and kept["consolidation_llm_calls"] == kept["merges"] == 0

    # another extractor over the stored run (no new collection): a bad answer twice skips that trajectory only
    fake = install_fake_reflector()
    stored = load_trajectories(Path(run))[0]
    tasks = [traj.task.description for _, traj in stored]
    good = json.dumps({"guidelines": [{"text": "Authenticate the user before any lookup.", "category": "strategy"}]})
    fake.replies = {tasks[0]: ["oops", "oops again"], **{t: [good] for t in tasks[1:]}}
    summary = build(Path(run), tmp_path / "other.jsonl", extractor=FAKE_REFLECTOR, consolidation="text")
    assert [s["source"] for s in summary["skipped_trajectories"]] == [stored[0][0]]
    rebuilt, meta = load_memory(tmp_path / "other.jsonl")
    assert meta["kind"] == "learned" and [g.support for g in rebuilt] == [2]

    # a run that is not a train run is refused when its records are read
    text = (run / "results.jsonl").read_text().replace('"split": "train"', '"split": "test"', 1)
    (run / "results.jsonl").write_text(text)
    with pytest.raises(BuildError, match="split=test"):
        load_trajectories(Path(run))
    # a train run whose episodes were delivered memory is refused by what the records say, whatever the strategy
    (run / "results.jsonl").write_text(text.replace('"split": "test"', '"split": "train"', 1)
                                       .replace('"memory_tokens": 0', '"memory_tokens": 12', 1))
    with pytest.raises(BuildError, match="memory_tokens=12"):
        load_trajectories(Path(run))

