"""Every design has its own controls (docs/controls.md): `placebo` and `protocol_only` take `match=<design>` for
each design that declares its frame (strategies/frame.py), read that design's artifact, deliver its header and
instruction, and `make tables`' controls view prints the decomposition for it; `frame: neutral` gives every
framed design one instruction."""

from __future__ import annotations

import pytest

from analysis import load_records
from analysis.views import controls
from harness.run import compose_job
from harness.runner import run_job
from memory_kit.memory_file import save_memory
from strategies import Guideline, StepView, StrategyContext, TaskView, create, strategy_class, validate_options
from strategies.frame import NEUTRAL_INSTRUCTION


ARTIFACT_KIND = {"awm": "workflows", "exp_rag": "experiences"}  # the designs that read an artifact of their own


def _artifact(tmp_path, kind: str) -> str:
    out = tmp_path / f"{kind}.jsonl"
    save_memory(out, [Guideline(id="x-0", text="Task: return an item | Actions: get_order() -> return_item()",
                                source_task_text="return an item", rationale="success")],
                {"kind": kind, "learned_from": {"benchmark": "tau2_retail", "split": "train", "task_ids": ["0"]}})
    return str(out)


@pytest.mark.parametrize("design", ["reasoning_bank", "dynamic_cheatsheet", "awm", "exp_rag"])
def test_a_sweep_with_both_arms_matched_prints_the_design_decomposition(design, artifact, runs_dir, tmp_path):
    own = ({f"+memory_by_strategy.{design}": _artifact(tmp_path, ARTIFACT_KIND[design])} if design in ARTIFACT_KIND
           else {"+memory_by_strategy.reasoning_bank": "null"} if design == "reasoning_bank" else {})
    for strategy in ("none", design, "placebo", "protocol_only"):
        options = [f"strategy.options.match={design}"] if strategy in ("placebo", "protocol_only") else []
        run_job(compose_job(["model=simulated", f"model.world={artifact}", "benchmark=tau2_retail",
                             "benchmark.limit=3", f"strategy={strategy}", f"memory={artifact}", *options,
                             *(f"{k}={v}" for k, v in own.items()), f"runs_dir={runs_dir}", "progress=false",
                             "run_name=ctl"]))
    records = load_records([runs_dir / "ctl"])
    by = {s: g for s, g in records.groupby("strategy")}
    assert set(by["placebo"]["control_arm"]) == {f"placebo:{design}"}
    assert set(by["protocol_only"]["control_arm"]) == {f"protocol_only:{design}"}
    # the placebo reads its design's own artifact (memory_by_strategy.<design>), never the run's guidelines
    assert set(by["placebo"]["memory"].astype(str)) == set(by[design]["memory"].astype(str))
    instruction = strategy_class(design).declaration.frame.instruction
    assert all(set(by[s]["memory_instruction"]) == {instruction} for s in (design, "placebo", "protocol_only"))
    text = controls.terminal(records, n_boot=100)
    assert f"content     = {design} - placebo" in text and "length      = placebo - none" in text
    assert "instruction = protocol_only - none" in text and f"`protocol_only` delivers {design}'s frame" in text


@pytest.mark.parametrize("design", ["full", "reasoning_bank", "awm", "awm_online", "exp_rag", "dynamic_cheatsheet",
                                    "ace"])
def test_protocol_only_delivers_the_design_frame_and_no_content(design, artifact):
    frame = strategy_class(design).declaration.frame
    arm = create("protocol_only", StrategyContext(options={"match": design}))
    text = arm.deliver(TaskView("tau2_retail", "5", ""), StepView(0)).text
    assert text.splitlines() == [f"<{frame.tag}>", *frame.head(), f"</{frame.tag}>"]
    neutral = create("protocol_only", StrategyContext(options={"match": design, "frame": "neutral"}))
    said = neutral.deliver(TaskView("tau2_retail", "5", ""), StepView(0)).text
    assert NEUTRAL_INSTRUCTION in said and (not frame.instruction or frame.instruction not in said)


def test_placebo_matches_a_design_per_step_under_its_frame(tmp_path):
    memory = _artifact(tmp_path, "workflows")
    ctx = StrategyContext(options={"match": "awm"}, memory_path=memory, model="gpt-4o")
    reference, placebo = create("awm", StrategyContext(memory_path=memory, model="gpt-4o")), create("placebo", ctx)
    task, step = TaskView("tau2_retail", "5", ""), StepView(0)
    ref, text = reference.deliver(task, step).text.splitlines(), placebo.deliver(task, step).text.splitlines()
    assert text[:2] == ref[:2] and text[-1] == ref[-1] and text[2] != ref[2] and "get_order" not in "\n".join(text)
    fixed = create("placebo", StrategyContext(options={"match": "dynamic_cheatsheet", "length_tokens": 300},
                                              model="gpt-4o"))
    from memory_kit.budget import token_counter

    line = fixed.deliver(task, step).text.splitlines()[1]
    assert line.startswith("- [p1] ") and abs(token_counter("gpt-4o")(line) - 300) <= 2


@pytest.mark.parametrize("options, said", [
    ({"match": "core_retrieval"}, "match must be a design that declares its frame"),
    ({"match": "awm", "frame": "plain"}, "option frame='plain'; valid: own, neutral"),
    ({"length_tokens": 0}, "length_tokens must be an integer >= 1"),
])
def test_a_bad_control_option_is_one_clear_line(options, said):
    with pytest.raises(ValueError, match=None) as exc:
        validate_options("placebo", options)
    assert said in str(exc.value)


def test_neutral_frame_gives_every_design_one_instruction(tmp_path):
    memory = _artifact(tmp_path, "workflows")
    own = create("awm", StrategyContext(memory_path=memory)).deliver(TaskView("b", "1", ""), StepView(0)).text
    neutral = create("awm", StrategyContext(options={"frame": "neutral"}, memory_path=memory))
    text = neutral.deliver(TaskView("b", "1", ""), StepView(0)).text
    assert "reuse the one that fits" in own and "reuse the one that fits" not in text and NEUTRAL_INSTRUCTION in text
    assert own.splitlines()[2:] == text.splitlines()[3:]  # the content is the same, only the instruction moved


def test_tables_say_when_designs_compared_head_to_head_differ_in_instruction():
    import pandas as pd

    rows = [{"benchmark": "b", "split": "test", "model": "m", "strategy": s, "task_id": str(t), "trial": 0,
             "success": t % 2 == 0, "error": None, "prompt_tokens": 100, "completion_tokens": 10, "memory_tokens": 50,
             "steps": 3, "memory": "mem.jsonl", "run": "r", "run_dir": "nowhere", "job": f"b/test/m/{s}",
             "memory_instruction": said}
            for s, said in (("full", "follow them"), ("awm", "reuse the one that fits")) for t in range(10)]
    text = controls.terminal(pd.DataFrame(rows), n_boot=50)
    assert "instruction wording differs between designs" in text and '`awm` "reuse the one that fits"' in text
    assert max(map(len, text.splitlines())) <= 160
    same = pd.DataFrame(rows).assign(memory_instruction=NEUTRAL_INSTRUCTION)  # frame=neutral: one instruction
    assert controls.terminal(same, n_boot=50) == ""
