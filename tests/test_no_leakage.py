"""No leakage: the user simulator's hidden scenario never reaches a strategy, an agent prompt, a record, or a
memory extractor; the extractor sees no reward or evaluator report unless --ground-truth."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from memory_kit.memory_file import load_memory
import strategies
from harness.memory.build import build
from harness.run import compose_job
from harness.runner import run_job
from harness.serving.providers import register_provider
from strategies import Guideline, StepView, TaskView, Trajectory
from strategies.core_retrieval import CoreRetrieval
from memory_kit.extraction import extraction_messages, render_trajectory
from tau2_fakes import RECORDING, RecordingOracle, make_data_dir

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

    learns_online = True  # an old plugin's class-level declaration (strategies/compat.py reads it)

    def __post_init__(self) -> None:
        super().__post_init__()
        self.seen: list[str] = []
        self.queries: list[str] = []
        self.verdicts: list[tuple] = []  # what record_facts was shown of the evaluator's verdict
        self.trajectories: list[Trajectory] = []  # as an online learner is handed them

    def deliver(self, task, step):
        self.seen.append(repr(task) + repr(step))
        self.queries.append(self.query_text(task, step))
        return super().deliver(task, step)

    def update(self, trajectory):
        self.seen.append(repr(trajectory))
        self.trajectories.append(trajectory)

    def record_facts(self, trajectory):
        self.seen.append(repr(trajectory))
        self.trajectories.append(trajectory)
        self.verdicts.append((trajectory.reward, trajectory.success, trajectory.feedback))
        return {}


def plant(tasks: list[dict], task_id: str = TASK) -> list[dict]:
    for t in tasks:
        if t["id"] == task_id:
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


TELECOM_TASK = "[mobile_data_issue]user_abroad_roaming_enabled_off[PERSONA:None]"  # in the small split
TASKS = {"retail": ("5", "test"), "airline": (TASK, "test"), "telecom": (TELECOM_TASK, "small")}


def plant_in(task) -> None:
    """The markers, on a tau2 Task: the reason for calling is said aloud, the rest is the simulator's only."""
    instr = task.user_scenario.instructions
    instr.reason_for_call = f"{instr.reason_for_call} {SPOKEN}"
    instr.known_info = f"{instr.known_info or ''} {MARKER}-known"
    instr.unknown_info = f"{instr.unknown_info or ''} {MARKER}-unknown"
    instr.task_instructions = f"{instr.task_instructions or ''} {MARKER}-instructions"


class ActingUser(RecordingOracle):
    """The recording oracle whose user, when offered tools of its own (telecom: its phone), first checks its
    phone's status bar, then speaks; keeps what its tool answered."""

    def __init__(self) -> None:
        super().__init__(speak_reason=True)
        self.user_tool_results: list[str] = []

    def completion(self, model, messages, *args, **kwargs):
        from litellm import ModelResponse

        meta = (kwargs.get("litellm_params") or {}).get("metadata") or {}
        if meta.get("role") == "user" and (kwargs.get("optional_params") or {}).get("tools"):
            answers = [str(m.get("content")) for m in messages if m.get("role") == "tool"]
            if not answers:
                call = {"id": "user_call_0", "type": "function",
                        "function": {"name": USER_TOOL, "arguments": "{}"}}
                return ModelResponse(model=model, choices=[{"message": {"role": "assistant", "content": None,
                                                                        "tool_calls": [call]}}],
                                     usage={"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10})
            self.user_tool_results = answers
            messages = [m for m in messages if m.get("role") != "tool" and not m.get("tool_calls")]
        return super().completion(model, messages, *args, **kwargs)


USER_TOOL = "check_status_bar"  # a telecom user tool: the agent has no tool of that name


@dataclass(frozen=True)
class Episode:
    domain: str
    records: list[dict]
    recorder: ActingUser
    probe: "Probe"
    embedder: CountingEmbedder
    run_dir: Path
    cfg: object
    learned: Trajectory  # what an online learner is handed
    stored: Trajectory  # what an offline builder reads back from the trajectory file

    @property
    def hidden(self) -> list[str]:
        """What the agent never saw: the simulator's scenario and, in telecom, its own tool calls (as every learner
        renders a call: `name({arguments})`; the policy names the tool, `check_status_bar()`) and their results."""
        return [MARKER, *([f"{USER_TOOL}({{", *self.recorder.user_tool_results] if self.domain == "telecom" else [])]


def run_episode(domain: str, root: Path) -> Episode:
    task_id, split = TASKS[domain]
    recorder = register_provider(RECORDING, ActingUser())
    embedder = CountingEmbedder()
    probe = Probe(options={"top_k": 1, "embed_cache": None}, guidelines=memory(), embedder=embedder)
    strategies.register("leak_probe", lambda ctx: probe)
    if domain == "telecom":  # tau2's packaged data only (benchmark.data_dir is retail and airline): plant in memory
        data = []
    else:
        data = [f"benchmark.data_dir={make_data_dir(root / 'data', domain, lambda ts: plant(ts, task_id))}"]
    cfg = compose_job(["model=oracle", f"model.name={RECORDING}/agent", "strategy=leak_probe",
                       f"benchmark=tau2_{domain}", f"benchmark.split={split}", f"benchmark.task_ids=['{task_id}']",
                       *data, f"runs_dir={root / 'runs'}", "run_name=leak", "progress=false"])
    with pytest.MonkeyPatch.context() as patch:
        if domain == "telecom":
            from harness.benchmarks.tau2 import data as tau2_data

            packaged = tau2_data.load_packaged_tasks

            def planted(*args, **kwargs):
                tasks = packaged(*args, **kwargs)
                for task in tasks:
                    if task.id == task_id:
                        plant_in(task)
                return tasks

            patch.setattr(tau2_data, "load_packaged_tasks", planted)
        run_dir = Path(run_job(cfg)["run_dir"])
    records = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    stored = _stored_trajectory(run_dir, records[0], cfg)
    return Episode(domain, records, recorder, probe, embedder, run_dir, cfg, probe.trajectories[-1], stored)


@pytest.fixture(scope="module", params=list(TASKS))
def episode(request, tmp_path_factory) -> Episode:
    return run_episode(request.param, tmp_path_factory.mktemp(request.param))


def test_hidden_scenario_never_reaches_strategy_prompt_or_record(episode):
    records, recorder, probe, run_dir = episode.records, episode.recorder, episode.probe, episode.run_dir
    assert len(records) == 1 and (records[0]["success"] or episode.domain == "telecom"), records

    user_prompts = [json.dumps(c["messages"]) for c in recorder.calls if c["role"] == "user"]
    agent_prompts = [json.dumps(c["messages"]) for c in recorder.calls if c["role"] == "agent"]
    assert agent_prompts and any(MARKER in p for p in user_prompts)  # planted: the simulator does get it
    if episode.domain == "telecom":  # planted: the user did act on its phone, and its phone answered
        assert recorder.user_tool_results and all("Status Bar" in r for r in recorder.user_tool_results)
        assert USER_TOOL in (run_dir / records[0]["trajectory"]).read_text()  # the trajectory file keeps it
    for hidden in episode.hidden:
        assert not any(hidden in p for p in agent_prompts), hidden
        assert probe.seen and not any(hidden in s for s in probe.seen), hidden  # deliver() inputs, the trajectory
        assert not any(hidden in t for t in episode.embedder.texts), hidden
        assert hidden not in records[0]["task_text"]
    # what the user said does reach the agent and retrieval, so the hidden marker's absence is no accident
    assert all(SPOKEN in p for p in agent_prompts) and all(SPOKEN in q for q in probe.queries)
    assert probe.verdicts == [(None, None, "")]  # record_facts, like learning, sees no verdict without ground truth
    for name in ("results.jsonl", "config.yaml", "manifest.json"):
        assert MARKER not in (run_dir / name).read_text()

    first_user = next(m["content"] for m in json.loads(agent_prompts[0]) if m["role"] == "user")
    assert records[0]["task_text"] == first_user  # what the agent saw, nothing more
    assert set(probe.queries) == {first_user}  # retrieval keyed on the user's first message
    if episode.domain == "airline":  # the memory's guidelines are about flights
        assert records[0]["delivered"][0] == ["core", probe.deliver(TaskView("x", TASK, ""), StepView(
            0, ({"role": "user", "content": first_user},))).ids[1]]

    # the stored episode, as memory extraction (`make memory`) reads it: nothing hidden, in the prompt either way
    for ground_truth in (False, True):
        prompt = json.dumps(extraction_messages(episode.stored, ground_truth), ensure_ascii=False)
        assert first_user in prompt and not [h for h in episode.hidden if h in prompt]


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
        _, meta = load_memory(out)
        assert meta["ground_truth"] is ground_truth and len(extractor.prompts) >= 2  # a retry on 0 for a failure
        shown = "".join(extractor.prompts)
        assert ("db_match" in shown and "reward" in shown) is ground_truth
        assert ("FAILED" in shown) is ground_truth


class DesignModel:
    """SCRIPTED model of the designs' own calls (not a language model): keeps every prompt; judges every episode a
    success (so awm_online induces) and answers with an item, a cheatsheet and a workflow at once."""

    ANSWER = ("Thoughts: done.\nStatus: success\n# Memory Item 1\n## Title T\n## Description D\n## Content C\n"
              "<cheatsheet>\n- [dc-1] check first (count: 1)\n</cheatsheet>\n# Summary Workflows\nWorkflow 1: a: b -> c")

    def __init__(self) -> None:
        self.prompts: list[str] = []

    def __call__(self, model, messages, **kwargs):
        from litellm import ModelResponse

        self.prompts.append(messages[-1]["content"])
        return ModelResponse(model=model, choices=[{"message": {"role": "assistant", "content": self.ANSWER}}],
                             usage={"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2})

    def llm(self):
        from memory_kit.role_llm import RoleLLM

        return RoleLLM("memdeliv-test-designs/x", completion=self)

    # ACE's JSON roles (strategies/ace/llm.py JsonLLM.ask)
    def ask(self, system, user, schema, name, check=None):
        self.prompts.append(user)
        return {"error_analysis": "-", "key_insight": "-", "bullet_tags": []}, {}


def memory_extractor(episode: Episode, model: DesignModel) -> None:  # `make memory` reads the stored episode
    model.prompts.append(extraction_messages(episode.stored)[1]["content"])  # [0] is the fixed system prompt


def reasoning_bank(episode: Episode, model: DesignModel) -> None:  # online (judge, extractor) and `make reasoning-bank`
    from strategies.reasoning_bank.strategy import BankOptions, distil
    from strategies.reasoning_bank import ReasoningBank

    ReasoningBank(options={"embed_cache": None}, embedder=CountingEmbedder(), llm=model.llm()).learn(episode.learned)
    distil(episode.stored, "k", model.llm(), BankOptions())


def dynamic_cheatsheet(episode: Episode, model: DesignModel) -> None:  # the curator
    from strategies.dynamic_cheatsheet import DynamicCheatsheet

    DynamicCheatsheet(options={}, llm=model.llm()).learn(episode.learned)


def awm(episode: Episode, model: DesignModel) -> None:  # `make awm`'s inducer over the stored episodes
    from strategies.awm.strategy import induction_prompt
    from memory_kit.experiences import condense

    model.prompts.append(induction_prompt([condense(episode.stored)]))


def awm_online(episode: Episode, model: DesignModel) -> None:  # the judge, then the inducer
    from strategies.awm import AwmOnline

    AwmOnline(options={}, llm=model.llm()).learn(episode.learned)


def ace_reflector(episode: Episode, model: DesignModel) -> None:
    from strategies.ace.playbook import Playbook
    from strategies.ace.roles import reflect

    reflect(model, episode.learned, Playbook(), [], allow_ground_truth=False,  # type: ignore[arg-type]
            max_trajectory_chars=50_000)


@pytest.mark.parametrize("learner", [memory_extractor, reasoning_bank, dynamic_cheatsheet, awm, awm_online,
                                     ace_reflector], ids=lambda f: f.__name__)
def test_no_learner_input_holds_what_the_agent_never_saw(episode, learner):
    model = DesignModel()
    learner(episode, model)
    assert model.prompts
    for prompt in model.prompts:
        assert SPOKEN in prompt  # the conversation is there: what the user said aloud
        assert not [hidden for hidden in episode.hidden if hidden in prompt], (episode.domain, prompt)


def test_the_rendered_episode_shows_only_the_agents_tool_calls():
    user_call = {"role": "user", "content": None, "tool_calls": [{"function": {"name": USER_TOOL, "arguments": "{}"}}]}
    agent_call = {"role": "assistant", "content": None, "tool_calls": [{"function": {"name": "get_details",
                                                                                    "arguments": "{}"}}]}
    text = render_trajectory(Trajectory(TaskView("t", "1", ""), (user_call, agent_call), None, None))
    assert "get_details({})" in text and USER_TOOL not in text
