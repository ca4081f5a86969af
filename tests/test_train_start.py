"""START=train (docs/strategies.md "Where an online learner starts"): every online design can start from its train
artifact, handed to it as memory_by_strategy.<name> (reasoning_bank: `make reasoning-bank`'s bank; awm_online:
`make awm`'s workflows; dynamic_cheatsheet: `make cheatsheet`'s, both variants), and its rows say so; without
one it starts empty, as its paper does. The artifact is learned from train only, and a wrong one is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

import strategies
from conftest import SAMPLE_MEMORY, config_check, read_records
from harness.memory import cheatsheet, reasoning_bank, workflows
from harness.run import exit_status
from harness.run import main as run_main
from strategies import StepView, StrategyContext, TaskView
from memory_kit.memory_file import load_memory, save_memory
from strategies.awm import AwmOnline
from strategies.dynamic_cheatsheet.artifact import KIND
from memory_kit.role_llm import RoleLLM
from test_awm_online import Scripted, _episode

LEARNERS = ("reasoning_bank", "dynamic_cheatsheet", "awm_online")
BUILDERS = {"reasoning_bank": reasoning_bank, "awm_online": workflows, "dynamic_cheatsheet": cheatsheet}


@pytest.fixture(scope="module")
def train_artifacts(tmp_path_factory) -> dict[str, Path]:
    """Each learner's train artifact, built by its builder from one collection run (2 train tasks, scripted)."""
    runs = tmp_path_factory.mktemp("train") / "runs"
    out, collect = {}, ["model=oracle", "benchmark=tau2_retail", "benchmark.limit=2", "progress=false"]
    for n, (learner, builder) in enumerate(BUILDERS.items()):
        out[learner] = runs / f"{learner}.jsonl"
        flags = ["--name", "t", "--runs-dir", str(runs), "--out", str(out[learner]), *(["--no-collect"] if n else [])]
        assert builder.main([*flags, "--", *collect]) == 0
    return out


def sweep(artifact: Path, runs_dir: Path, name: str, entries: dict[str, Path]) -> dict[str, list[dict]]:
    """The simulated-world sweep `make sweep` runs (2 test tasks), each learner handed the entries given; rows per
    learner in the order its one stream ran them."""
    argv = ["-m", "model=simulated", f"model.world={artifact}", "benchmark=tau2_retail", "benchmark.limit=2",
            f"strategy={','.join(LEARNERS)}", f"memory={artifact}", "+memory_by_strategy.reasoning_bank=null",
            *[f"+memory_by_strategy.{k}={v}" for k, v in entries.items()],
            f"runs_dir={runs_dir}", "progress=false", f"run_name={name}"]
    if "reasoning_bank" in entries:
        argv.remove("+memory_by_strategy.reasoning_bank=null")
    assert exit_status(run_main, argv) == 0
    rows = read_records(runs_dir / name)
    return {s: [r for r in rows if r["strategy"] == s] for s in LEARNERS}


def test_every_learner_starts_empty_by_default_and_from_its_train_artifact_with_start_train(artifact, runs_dir,
                                                                                              train_artifacts):
    empty = sweep(artifact, runs_dir, "empty", {})
    trained = sweep(artifact, runs_dir, "train", train_artifacts)
    for learner in LEARNERS:
        assert [r["learner_start"] for r in empty[learner]] == ["empty", "empty"]
        assert [r["learner_start"] for r in trained[learner]] == ["train artifact", "train artifact"]
        assert {r["memory"] for r in trained[learner]} == {str(train_artifacts[learner])}
        assert all(r["memory"] is None for r in empty[learner])  # memory= (a guideline file) is not read
    ids = {k: {g.id for g in load_memory(path)[0]} for k, path in train_artifacts.items()}
    for learner in ("reasoning_bank", "awm_online"):  # the first episode delivers from the artifact alone
        first_empty, first_trained = empty[learner][0]["delivered"], trained[learner][0]["delivered"]
        assert not any(first_empty) and any(first_trained)
        assert {i for step in first_trained for i in step} <= ids[learner]
    assert trained["awm_online"][0]["delivered"][0] == sorted(ids["awm_online"], key=lambda i: int(i.split("-")[1]))
    # the cheatsheet's block: "(empty)" at first without the artifact, the train cheatsheet with it
    assert trained["dynamic_cheatsheet"][0]["memory_tokens"] > empty["dynamic_cheatsheet"][0]["memory_tokens"]


def test_dynamic_cheatsheet_starts_both_variants_from_the_train_cheatsheet(train_artifacts):
    items, meta = load_memory(train_artifacts["dynamic_cheatsheet"])
    assert meta["kind"] == KIND and meta["split"] == "train" and meta["learned_from"]["ground_truth"] is False
    sheets = {g.id: g.text for g in items if g.id.startswith("dc-cheatsheet-")}
    pairs = [g for g in items if g.id.startswith("dc-pair-")]
    assert [g.source_task_ids for g in pairs] == [("0",), ("1",)]  # one per train episode, in order
    assert set(meta["learned_from"]["task_ids"]) == {"0", "1"}
    view = (TaskView("tau2_retail", "9", ""), StepView(0))  # before the user speaks: no synthesis yet
    for variant in ("cumulative", "retrieval_synthesis"):
        ctx = StrategyContext(options={"variant": variant}, memory_path=str(train_artifacts["dynamic_cheatsheet"]),
                              model="memdeliv-scripted/oracle")
        made = strategies.create("dynamic_cheatsheet", ctx)
        assert made.record_facts(None) == {"learner_start": "train artifact"}
        text = made.deliver(*view).text
        assert sheets[f"dc-cheatsheet-{variant}"] in text and "(empty)" not in text
        stream = made.for_trial(1)  # every trial's stream from the same start
        assert stream.deliver(*view).text == made.deliver(*view).text
    # retrieval_synthesis retrieves from the train episodes
    retrieved = made.retrieve(pairs[0].source_task_text)
    assert [task for task, _, _ in retrieved] == [g.source_task_text for g in reversed(pairs)]
    empty = strategies.create("dynamic_cheatsheet", StrategyContext(model="memdeliv-scripted/oracle"))
    assert empty.record_facts(None) == {"learner_start": "empty"} and "(empty)" in empty.deliver(*view).text


def test_make_plan_sizes_the_block_each_learner_starts_from(train_artifacts):
    for learner in ("dynamic_cheatsheet", "awm_online"):
        declared = strategies.declaration(learner)
        opts = declared.parse(learner, {})
        started = declared.plan(str(train_artifacts[learner]), len, opts)
        assert started is not None and "train" in started.note
        assert started.block_tokens > declared.plan(None, len, opts).block_tokens


def test_awm_online_keeps_its_train_workflows_and_grows_after_them():
    start = (strategies.Guideline(id="awm-1", text="Train workflow: x -> y"),)
    awm = AwmOnline(start=start, llm=RoleLLM("scripted/x", completion=Scripted()))
    view = (TaskView("b", "q", "anything"), StepView(0))
    assert "- [awm-1] Train workflow: x -> y" in awm.deliver(*view).text
    awm.learn(_episode("2", "ok, cancel it"))
    text = awm.deliver(*view).text
    assert "- [awm-1] Train workflow" in text and "- [awm-2] Induction" in text
    assert awm.for_trial(1).deliver(*view).text.count("[awm-") == 1  # another stream: the start alone
    assert awm.record_facts(None) == {"learner_start": "train artifact"}


def test_the_train_cheatsheet_is_learned_from_train_only(tmp_path, capsys):
    code = cheatsheet.main(["--name", "u", "--runs-dir", str(tmp_path), "--", "model=oracle", "benchmark.split=test"])
    assert code == 2 and "train split only" in capsys.readouterr().err


@pytest.mark.parametrize("learner,kind", [("awm_online", "workflows"), ("dynamic_cheatsheet", KIND)])
def test_a_wrong_artifact_is_refused_before_anything_runs_and_memory_is_not_read(learner, kind, tmp_path, capsys,
                                                                                   train_artifacts):
    code, err = config_check(capsys, "model=oracle", f"strategy={learner}", f"+memory_by_strategy.{learner}="
                             f"{SAMPLE_MEMORY}", runs_dir=tmp_path)
    assert code == 2 and f"starts from a {kind} artifact" in err and len(err.strip().splitlines()) == 1
    assert config_check(capsys, "model=oracle", f"strategy={learner}", f"memory={SAMPLE_MEMORY}",
                        runs_dir=tmp_path)[0] is None  # memory= is not theirs: they start empty


def test_a_cheatsheet_artifact_without_both_variants_is_refused(tmp_path, capsys, train_artifacts):
    items, meta = load_memory(train_artifacts["dynamic_cheatsheet"])
    partial = tmp_path / "partial.jsonl"
    save_memory(partial, [g for g in items if g.id != "dc-cheatsheet-retrieval_synthesis"], meta)
    code, err = config_check(capsys, "model=oracle", "strategy=dynamic_cheatsheet",
                             f"+memory_by_strategy.dynamic_cheatsheet={partial}", runs_dir=tmp_path)
    assert code == 2 and "one cheatsheet per variant" in err


def test_the_train_artifact_is_refused_on_the_tasks_it_learned_from(tmp_path, capsys, train_artifacts):
    code, err = config_check(capsys, "model=oracle", "strategy=awm_online", "benchmark=tau2_retail",
                             "benchmark.split=train", "benchmark.limit=2",
                             f"+memory_by_strategy.awm_online={train_artifacts['awm_online']}", runs_dir=tmp_path)
    assert code == 2 and "in-sample" in err


def test_a_placebo_matched_to_an_online_design_matches_its_train_start(train_artifacts):
    """docs/controls.md: the placebo's copy of the design never learns and matches its starting block."""
    view = (TaskView("tau2_retail", "9", "return an item"), StepView(0))
    ctx = StrategyContext(options={"match": "awm_online"}, memory_path=str(train_artifacts["awm_online"]),
                          model="memdeliv-scripted/oracle")
    design = strategies.create("awm_online", ctx).deliver(*view)
    placebo = strategies.create("placebo", ctx).deliver(*view)
    assert design.text and placebo.text and placebo.text != design.text
    workflows = len(load_memory(train_artifacts["awm_online"])[0])
    assert placebo.text.count("- [p") == design.text.count("- [awm-") == len(design.guidelines) == workflows
    assert strategies.create("placebo", StrategyContext(options={"match": "awm_online"})).deliver(*view).text == ""
