"""reasoning_bank (ReasoningBank, Ouyang et al. 2025): reference defaults, the judge -> extraction -> append
online loop without labels, retrieval of the most similar past task's items, per-trial streams, and a bank learned
from train only. The model is a scripted callable here (no language model)."""

from __future__ import annotations


import pytest
import yaml
from litellm import ModelResponse

import strategies
from ace_fakes import FakeBagOfWordsEmbedder
from conftest import REPO, SAMPLE_MEMORY, config_check, main_in_process
from harness.provenance import ProvenanceError, check_use
from strategies import Guideline, StepView, TaskView, Trajectory
from memory_kit.memory_file import load_memory
from strategies.base import calls_to
from strategies.reasoning_bank.strategy import HEADER, INSTRUCTION, KIND, BankOptions, load_bank, render_bank
from memory_kit.judge import JUDGE_TEMPERATURE
from strategies.reasoning_bank import ReasoningBank
from strategies.reasoning_bank.prompts import FAILURE_SYSTEM, SUCCESS_SYSTEM, parse_items
from memory_kit.judge import JUDGE_SYSTEM
from memory_kit.role_llm import SCRIPTED_DESIGNS, RoleLLM, role_model

ITEM = "# Memory Item {i}\n## Title T{i}\n## Description D{i}.\n## Content C{i}.\n"


def test_defaults_are_the_references_and_the_config_says_the_same():
    # google-research ReasoningBank/WebArena: select_memory n=1 (top_k), autoeval judge (no ground truth),
    # "at most 3" items per trajectory (prompt/instruction.py), extraction temperature 1.0 (induce_memory.py)
    opts = BankOptions()
    assert (opts.top_k, opts.judge, opts.learn_online, opts.max_items, opts.temperature) == (1, "self", True, 3, 1.0)
    cfg = yaml.safe_load((REPO / "configs" / "strategy" / "reasoning_bank.yaml").read_text())
    assert cfg["options"] == {k: getattr(opts, k) for k in cfg["options"]} and "reasoning_bank" in strategies.available()
    assert not strategies.uses_ground_truth("reasoning_bank", {})
    assert strategies.uses_ground_truth("reasoning_bank", {"judge": "ground_truth"})
    assert "at most 3" in SUCCESS_SYSTEM and "at most 3" in FAILURE_SYSTEM and "failed" in FAILURE_SYSTEM
    # the extractor's own max_tokens (induce_memory.py llm_generate: 65536, gemini-2.5-flash's output limit; ours
    # 8192, documented), never the run's; the judge at temperature 0 (autoeval/clients.py)
    assert opts.max_tokens == 8192 and JUDGE_TEMPERATURE == 0.0


def test_the_block_carries_the_references_instruction_to_discuss_each_item():
    """WebArena/agents/legacy/agent.py appends the items to the system message after an instruction: the items may
    help, use them when relevant, and at each step first discuss explicitly whether to use each item, then act."""
    text = render_bank((Guideline(id="rb-1-1", text="T: D C"),))
    assert text.splitlines()[1:3] == [HEADER, INSTRUCTION] and "- [rb-1-1] T: D C" in text
    assert "each memory item" in INSTRUCTION and "first state explicitly whether you will use" in INSTRUCTION


def test_items_are_parsed_complete_and_at_most_three():
    text = "".join(ITEM.format(i=i) for i in range(1, 6)) + "# Memory Item 6\n## Title only a title\n"
    assert parse_items(text) == [("T1", "D1.", "C1."), ("T2", "D2.", "C2."), ("T3", "D3.", "C3.")]
    assert parse_items("# Memory Item 1\n## Title x\n## Content y\n") == []  # no description: dropped


class Scripted:
    """A scripted model: the judge says `verdict`; the extractor writes two items. Records every system prompt."""

    def __init__(self, verdict: str):
        self.verdict, self.systems, self.temperatures, self.max_tokens = verdict, [], [], []

    def __call__(self, model, messages, **kwargs):
        system = messages[0]["content"]
        self.systems.append(system)
        self.temperatures.append(kwargs.get("temperature"))
        self.max_tokens.append(kwargs.get("max_tokens"))
        text = f'Status: "{self.verdict}"' if system == JUDGE_SYSTEM else ITEM.format(i=1) + ITEM.format(i=2)
        return ModelResponse(choices=[{"message": {"role": "assistant", "content": text}}],
                             usage={"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110})


def _episode(task_id: str, text: str) -> Trajectory:  # as an online learner sees it without labels
    return Trajectory(task=TaskView("b", task_id, text), messages=(), reward=None, success=None,
                      episode=f"{task_id}#0")


def test_online_it_judges_itself_extracts_appends_and_reports_its_calls():
    model = Scripted("failure")
    bank = ReasoningBank(embedder=FakeBagOfWordsEmbedder(), llm=RoleLLM("scripted/x", completion=model))
    assert bank.state is bank and bank.deliver(TaskView("b", "q", "refund shoes"), StepView(0)).empty
    calls = []
    with calls_to(calls.append):
        facts = bank.learn(_episode("7", "refund the blue shoes"))
    assert model.systems == [JUDGE_SYSTEM, FAILURE_SYSTEM] and model.temperatures == [0.0, 1.0]
    assert model.max_tokens == [None, 8192]  # the extractor's own limit, the judge the run's
    assert facts == {"rb_judged_success": False, "rb_items_added": 2}
    assert [c.role for c in calls] == ["rb_judge", "rb_extractor"] and all(c.prompt_tokens == 100 for c in calls)
    bank.learn(_episode("8", "change my address"))
    shown = bank.deliver(TaskView("b", "q", "shoes refund please"), StepView(0))
    assert shown.ids == ["rb-7-t0-1", "rb-7-t0-2"]  # top_k 1: every item of the most similar past task
    assert "- [rb-7-t0-1] T1: D1. C1." in shown.text
    other = bank.for_trial(1)  # its own stream, from the starting (empty) bank
    assert other is not bank and other.deliver(TaskView("b", "q", "shoes refund"), StepView(0)).empty
    # top_k 0 (the dose axis' first point, the paper's k = 0): it learns all the same, and delivers nothing
    blind = ReasoningBank(options={"top_k": 0}, embedder=FakeBagOfWordsEmbedder(),
                          llm=RoleLLM("scripted/x", completion=Scripted("success")))
    assert blind.learn(_episode("7", "refund the blue shoes"))["rb_items_added"] == 2
    assert blind.deliver(TaskView("b", "q", "shoes refund please"), StepView(0)).empty


def test_a_scripted_run_model_is_answered_by_the_scripted_designs_model():
    assert role_model(None, "memdeliv-simulated/strong") == SCRIPTED_DESIGNS
    assert role_model(None, "openai/gpt-4.1") == "openai/gpt-4.1" and role_model("x/y", "openai/gpt-4.1") == "x/y"


def test_learned_from_train_only(tmp_path, capsys):
    with pytest.raises(ValueError, match="reasoning_bank artifact.*make reasoning-bank"):
        load_bank(str(SAMPLE_MEMORY))
    refused = main_in_process("harness.memory.reasoning_bank", "--name", "u", "--runs-dir", str(tmp_path), "--",
                              "model=oracle", "benchmark.split=test")
    assert refused.returncode == 2 and "train split only" in refused.stderr
    # the label as judge is ground truth: allowed on train only
    code, err = config_check(capsys, "model=oracle", "strategy=reasoning_bank", "strategy.options.judge=ground_truth",
                             "benchmark=tau2_retail", "benchmark.split=test", "memory=null", runs_dir=tmp_path)
    assert code == 2 and "ground truth" in err and "train split only" in err


def test_the_offline_bank_is_built_from_train_and_refused_on_its_own_tasks(tmp_path):
    runs = tmp_path / "runs"
    done = main_in_process("harness.memory.reasoning_bank", "--name", "t", "--runs-dir", str(runs), "--",
                           "model=oracle", "benchmark=tau2_retail", "benchmark.limit=2", "progress=false")
    assert done.returncode == 0, done.stderr[-2000:]
    items, meta = load_memory(runs / "memory" / "t" / "reasoning_bank" / "bank.jsonl")
    learned = meta["learned_from"]
    assert meta["kind"] == KIND and learned["split"] == "train" and learned["ground_truth"] is False
    assert items and {g.source_task_ids[0] for g in items} <= set(learned["task_ids"])
    assert meta["extractor"] == SCRIPTED_DESIGNS and "SCRIPTED" in meta["note"]
    build = yaml.safe_load((runs / "memory" / "t" / "reasoning_bank" / "build.json").read_text())
    assert build["extractor_usage"]["calls"] == 4  # judge + extractor per episode: the build's cost, once
    with pytest.raises(ProvenanceError, match="in-sample"):
        check_use(meta, "tau2_retail", learned["task_ids"], False)
