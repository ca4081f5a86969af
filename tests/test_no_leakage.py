"""No leakage: the user simulator's hidden scenario never reaches a strategy, an agent prompt, a record, or a
memory extractor; the extractor sees no reward or evaluator report unless --ground-truth."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np

import strategies
from harness.memory.build import build
from harness.run import compose_job
from harness.runner import run_job
from harness.serving.providers import register_provider
from strategies import Guideline, StepView, TaskView, Trajectory
from strategies.core_retrieval import CoreRetrieval
from strategies.extraction import extraction_messages
from tau2_fakes import RECORDING, install_recording, make_data_dir

MARKER = "ZQX-HIDDEN-7741"
SPOKEN = "ZQX-SPOKEN-5521"  # in the reason for calling, which the user says aloud: the positive control
TASK = "2"  # an airline test task


class CountingEmbedder:
    """Test double: a vector per text from its sha256 (the same in every process, unlike hash(), whose salt
    made two guidelines near-duplicates in some runs); keeps every text it was asked to embed."""

    name = "counting"

    def __init__(self) -> None:
        self.texts: list[str] = []

    def embed(self, texts):
        self.texts += list(texts)
        rows = [np.random.default_rng(int.from_bytes(hashlib.sha256(t.encode()).digest()[:8], "big")).normal(size=8)
                for t in texts]
        return np.array([r / np.linalg.norm(r) for r in rows], dtype=np.float32).reshape(len(texts), 8)


class Probe(CoreRetrieval):
    """core_retrieval, keeping every deliver() input and every trajectory it is handed to learn from."""

    def __post_init__(self) -> None:
        super().__post_init__()
        self.learns_online = True
        self.seen: list[str] = []
        self.queries: list[str] = []
        self.verdicts: list[tuple] = []  # what record_facts was shown of the evaluator's verdict

    def deliver(self, task, step):
        self.seen.append(repr(task) + repr(step))
        self.queries.append(self.query_text(task, step))
        return super().deliver(task, step)

    def update(self, trajectory):
        self.seen.append(repr(trajectory))

    def record_facts(self, trajectory):
        self.seen.append(repr(trajectory))
        self.verdicts.append((trajectory.reward, trajectory.success, trajectory.feedback))
        return {}


def plant(tasks: list[dict]) -> list[dict]:
    for t in tasks:
        if t["id"] == TASK:
            instr = t["user_scenario"]["instructions"]
            instr["reason_for_call"] = f"{instr['reason_for_call']} {SPOKEN}"
            instr["known_info"] = f"{instr.get('known_info') or ''} {MARKER}-known"
            instr["unknown_info"] = f"{instr.get('unknown_info') or ''} {MARKER}-unknown"
            instr["task_instructions"] = f"{instr.get('task_instructions') or ''} {MARKER}-instructions"
    return tasks


def memory() -> tuple[Guideline, ...]:
    return (Guideline(id="core", text="Always authenticate first.", support=3),
            Guideline(id="p1", text="Check the fare class.", source_task_text="change a flight"),
            Guideline(id="p2", text="Offer travel certificates.", source_task_text="cancelled flight compensation"))


def test_hidden_scenario_never_reaches_strategy_prompt_or_record(tmp_path):
    data = make_data_dir(tmp_path / "data", "airline", plant)
    recorder = install_recording(speak_reason=True)
    embedder = CountingEmbedder()
    probe = Probe(options={"top_k": 1, "embed_cache": None}, guidelines=memory(), embedder=embedder)
    strategies.register("leak_probe", lambda ctx: probe)
    cfg = compose_job(["model=oracle", f"model.name={RECORDING}/agent", "strategy=leak_probe",
                       "benchmark=tau2_airline", f"benchmark.data_dir={data}", f"benchmark.task_ids=['{TASK}']",
                       f"runs_dir={tmp_path / 'runs'}", "run_name=leak", "progress=false"])
    run_dir = Path(run_job(cfg)["run_dir"])
    records = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    assert len(records) == 1 and records[0]["success"], records

    user_prompts = [json.dumps(c["messages"]) for c in recorder.calls if c["role"] == "user"]
    agent_prompts = [json.dumps(c["messages"]) for c in recorder.calls if c["role"] == "agent"]
    assert agent_prompts and any(MARKER in p for p in user_prompts)  # planted: the simulator does get it
    assert not any(MARKER in p for p in agent_prompts)
    # what the user said does reach the agent and retrieval, so the hidden marker's absence is no accident
    assert all(SPOKEN in p for p in agent_prompts) and all(SPOKEN in q for q in probe.queries)
    assert probe.seen and not any(MARKER in s for s in probe.seen)  # deliver() inputs and the learned trajectory
    assert probe.verdicts == [(None, None, "")]  # record_facts, like learning, sees no verdict without ground truth
    assert not any(MARKER in t for t in embedder.texts)
    for name in ("results.jsonl", "config.yaml", "manifest.json"):
        assert MARKER not in (run_dir / name).read_text()

    first_user = next(m["content"] for m in json.loads(agent_prompts[0]) if m["role"] == "user")
    assert records[0]["task_text"] == first_user  # what the agent saw, nothing more
    assert set(probe.queries) == {first_user}  # retrieval keyed on the user's first message
    assert records[0]["delivered"][0] == ["core", probe.deliver(TaskView("x", TASK, ""), StepView(
        0, ({"role": "user", "content": first_user},))).ids[1]]

    # the stored episode, as memory extraction reads it: nothing hidden, in the prompt either way
    bench_traj = _stored_trajectory(run_dir, records[0], cfg)
    for ground_truth in (False, True):
        prompt = json.dumps(extraction_messages(bench_traj, ground_truth))
        assert MARKER not in prompt and first_user in prompt


def _stored_trajectory(run_dir: Path, record: dict, cfg) -> Trajectory:
    from harness import benchmarks

    return benchmarks.create(cfg.benchmark).load_trajectory(run_dir / record["trajectory"], record)


def test_core_only_until_the_user_speaks():
    embedder = CountingEmbedder()
    strategy = CoreRetrieval(options={"top_k": 2, "embed_cache": None}, guidelines=memory(), embedder=embedder)
    before = strategy.deliver(TaskView("tau2_airline", "7", ""), StepView(0, ({"role": "assistant",
                                                                               "content": "Hi! How can I help?"},)))
    assert before.ids == ["core"]
    said = ({"role": "assistant", "content": "Hi!"}, {"role": "user", "content": "I want to change a flight."})
    after = strategy.deliver(TaskView("tau2_airline", "7", ""), StepView(1, said))
    assert after.ids[0] == "core" and len(after.ids) == 3
    assert embedder.texts[-1] == "I want to change a flight."
    # a benchmark that states the task up front (AppWorld) keys on that statement
    strategy.deliver(TaskView("appworld", "a_1", "Pay my phone bill."), StepView(0))
    assert embedder.texts[-1] == "Pay my phone bill."


def _episode(feedback: str = "db_match=False; communicated '42 USD': False") -> Trajectory:
    msgs = ({"role": "user", "content": "Hi, I need a refund."}, {"role": "assistant", "content": "Done."})
    return Trajectory(task=TaskView("tau2_retail", "3", "Hi, I need a refund."), messages=msgs, reward=0.0,
                      success=False, feedback=feedback)


def test_extraction_prompt_has_no_outcome_unless_ground_truth():
    plain = extraction_messages(_episode(), ground_truth=False)[1]["content"]  # [0] is the fixed system prompt
    for hidden in ("db_match", "42 USD", "reward", "FAILED", "Evaluator"):
        assert hidden not in plain
    opted = extraction_messages(_episode(), ground_truth=True)[1]["content"]
    assert "FAILED" in opted and "reward 0" in opted and "db_match=False" in opted


class RecordingExtractor:
    """SCRIPTED extractor for tests: keeps every prompt, answers with no guidelines."""

    def __init__(self) -> None:
        from litellm import CustomLLM, ModelResponse

        prompts = self.prompts = []

        class Handler(CustomLLM):
            def completion(self, model, messages, *args, **kwargs):
                prompts.append(messages[-1]["content"])  # the episode part (the system prompt is fixed)
                return ModelResponse(model=model, choices=[{"message": {"role": "assistant",
                                                                        "content": '{"guidelines": []}'}}],
                                     usage={"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2})

        register_provider("memdeliv-test-extractor", Handler())


def test_build_memory_shows_reward_only_with_ground_truth(tmp_path):
    cfg = compose_job(["model=oracle", "benchmark=tau2_retail", "benchmark.split=train", "benchmark.task_ids=[4,6]",
                       "strategy=none", f"runs_dir={tmp_path}", "run_name=memory/gt", "progress=false",
                       "+model.kwargs.metadata={sabotage_rate: 0.5}"])
    run_dir = Path(run_job(cfg)["run_dir"])
    records = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    assert {r["success"] for r in records} == {True, False}  # one failure: its report would say db_match=False
    for ground_truth in (False, True):
        extractor = RecordingExtractor()
        out = tmp_path / f"gt-{ground_truth}.jsonl"
        build(run_dir, out, extractor="memdeliv-test-extractor/x", ground_truth=ground_truth)
        _, meta = strategies.load_memory(out)
        assert meta["ground_truth"] is ground_truth and len(extractor.prompts) >= 2  # a retry on 0 for a failure
        shown = "".join(extractor.prompts)
        assert ("db_match" in shown and "reward" in shown) is ground_truth
        assert ("FAILED" in shown) is ground_truth
