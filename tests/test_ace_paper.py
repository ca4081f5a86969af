"""ACE as its reference code runs it: reflect -> re-run rounds, ground truth only when allowed, citations
from tool-call turns. SCRIPTED roles (tests/ace_fakes.py) and SCRIPTED agents; no language model here."""

from __future__ import annotations

import json
from pathlib import Path

from ace_fakes import MODEL, install_scripted_roles
from conftest import read_records
from harness.memory import ace_adapt
from harness.store import RunStore
from strategies import StepView, TaskView, Trajectory
from strategies.ace.adapt import AceSettings, Adapter
from strategies.ace.llm import JsonLLM
from strategies.ace.playbook import Playbook
from strategies.ace.roles import cited_ids
from strategies.ace.online import AceOnline
from memory_kit.budget import token_counter

TASK = TaskView("tau2_retail", "7", "I want to return a lamp")
GOLD = "assistant: return_delivered_order_items({\"order_id\": \"#W1\"})"
REFLECTION = {"error_analysis": "skipped the return call", "key_insight": "MARKER-INSIGHT: finish the return",
              "bullet_tags": [{"id": "str-00001", "tag": "helpful"}]}


def playbook() -> Playbook:
    pb, _ = Playbook().add("strategies", "Look the order up first.")
    return pb


def episode(success: bool, text: str = "I used [str-00001].") -> Trajectory:
    return Trajectory(task=TASK, messages=({"role": "user", "content": "return my lamp"},
                                           {"role": "assistant", "content": text}),
                      reward=float(success), success=success, feedback="db_match=%s" % success)


def learner(tmp_path: Path, **settings) -> AceOnline:
    adapter = Adapter(reflector=JsonLLM(MODEL), curator=JsonLLM(MODEL), count_tokens=token_counter("gpt-4o"),
                      settings=AceSettings(**settings))
    return AceOnline(playbook(), adapter=adapter, artifacts_dir=tmp_path, meta={"source": None})


class ScriptedAgent:
    """A SCRIPTED agent: it fails until `needs` is in what the strategy delivers to it."""

    def __init__(self, strategy: AceOnline, needs: str):
        self.strategy, self.needs, self.seen = strategy, needs, []

    def __call__(self) -> Trajectory:
        text = self.strategy.deliver(TASK, StepView(index=0)).text
        self.seen.append(text)
        return episode(self.needs in text)


def history(tmp_path: Path) -> list[dict]:
    return [json.loads(line) for line in (tmp_path / "history.jsonl").read_text().splitlines()]


def test_reflection_rounds_stop_at_the_first_success(tmp_path):
    roles = install_scripted_roles()
    for _ in range(3):
        roles.queue("reflector", REFLECTION)
    strategy = learner(tmp_path, allow_ground_truth=True)
    agent = ScriptedAgent(strategy, needs="MARKER-INSIGHT")
    strategy.learn(episode(False), rerun=agent, gold=lambda: GOLD)
    assert len(agent.seen) == 1  # the first re-run had the reflection in context and succeeded: no more rounds
    assert "<ace_reflection>" in agent.seen[0] and "[str-00001]" in agent.seen[0]  # playbook + reflection
    row = history(tmp_path)[-1]
    assert [(r["round"], r["success"]) for r in row["rounds"]] == [(1, True)]
    assert row["success"] is False and row["final_success"] is True
    assert [c["role"] for c in roles.calls] == ["reflector", "curator"]  # curator_frequency 1: once per sample
    assert strategy.deliver(TASK, StepView(index=0)).text.count("<ace_reflection>") == 0  # only during the re-run


def test_reflection_rounds_are_capped_and_count_every_round(tmp_path):
    roles = install_scripted_roles()
    for _ in range(5):
        roles.queue("reflector", REFLECTION)
    strategy = learner(tmp_path, allow_ground_truth=True, reflection_rounds=3)
    agent = ScriptedAgent(strategy, needs="a reflection that never comes")
    strategy.learn(episode(False), rerun=agent, gold=lambda: GOLD)
    assert len(agent.seen) == 3 and sum(c["role"] == "reflector" for c in roles.calls) == 3
    row = history(tmp_path)[-1]
    assert [r["success"] for r in row["rounds"]] == [False, False, False] and row["final_success"] is False
    assert strategy.playbook.get("str-00001").helpful == 3  # counters updated each round, as the reference


def test_no_rounds_and_no_labels_without_ground_truth(tmp_path):
    roles = install_scripted_roles()
    roles.queue("reflector", REFLECTION)
    strategy = learner(tmp_path)  # allow_ground_truth false (default)
    agent = ScriptedAgent(strategy, needs="MARKER-INSIGHT")
    asked = []
    strategy.learn(episode(False), rerun=agent, gold=lambda: asked.append(1) or GOLD)
    assert agent.seen == [] and asked == []  # deciding to retry needs the verdict, a label; gold never fetched
    prompt = roles.calls[0]["messages"][1]["content"]
    assert "return_delivered_order_items" not in prompt and "reward" not in prompt and "db_match" not in prompt
    assert "no ground truth" in prompt


def test_ground_truth_mode_puts_the_gold_actions_in_the_reflector_prompt(tmp_path):
    roles = install_scripted_roles()
    learner(tmp_path, allow_ground_truth=True).learn(episode(True), rerun=None, gold=lambda: GOLD)
    prompt = roles.calls[0]["messages"][1]["content"]
    assert GOLD in prompt and "Ground truth" in prompt and "reward=1.0" in prompt


def test_cited_ids_are_read_from_turns_that_also_call_a_tool():
    from tau2.data_model.message import AssistantMessage, ToolCall, UserMessage

    from harness.benchmarks.tau2.results import trajectory_messages

    call = ToolCall(id="c1", name="get_order_details", arguments={"order_id": "#W1"})
    messages = [UserMessage(role="user", content="return my lamp"),
                AssistantMessage(role="assistant", content=None, tool_calls=[call],
                                 raw_data={"content": "Following [str-00001], I look the order up."}),
                AssistantMessage(role="assistant", content="Done.")]
    converted = trajectory_messages(messages)
    assert converted[1]["content"] is None and converted[1]["raw_content"].startswith("Following [str-00001]")
    traj = Trajectory(task=TASK, messages=converted, reward=1.0, success=True)
    assert cited_ids(traj, playbook()) == ["str-00001"]
    roles = install_scripted_roles()
    roles.queue("reflector", REFLECTION)  # tags str-00001 helpful: counted because it was cited
    out, report = Adapter(reflector=JsonLLM(MODEL), curator=JsonLLM(MODEL), count_tokens=token_counter("gpt-4o"),
                          settings=AceSettings()).step(playbook(), traj)
    assert report.cited == ["str-00001"] and out.get("str-00001").helpful == 1
    assert "Following [str-00001]" in roles.calls[0]["messages"][1]["content"]  # the Reflector sees that text


def test_adaptation_reruns_a_failed_tau2_episode_until_the_reflection_fixes_it(tmp_path):
    """Through the runner: a SCRIPTED oracle that drops its last gold call unless the reflection is in its
    system prompt. With --ground-truth the first failure is reflected on (gold actions in the prompt) and
    re-run once, successfully; results.jsonl keeps the first attempt, retries.jsonl the re-run."""
    roles = install_scripted_roles()
    roles.queue("reflector", REFLECTION)
    out = tmp_path / "learned.jsonl"
    code = ace_adapt.main(["model=oracle", "benchmark=tau2_retail", "progress=false",
                           "+model.kwargs={metadata:{sabotage_rate:1.0,sabotage_unless:'<ace_reflection>'}}",
                           "--runs-dir", str(tmp_path), "--run", "adapt", "--train", "1", "--val", "0",
                           "--out", str(out), "--reflector-model", MODEL, "--curator-model", MODEL, "--ground-truth"])
    assert code == 0
    first = read_records(tmp_path / "adapt" / "epoch1_train")
    assert len(first) == 1 and first[0]["success"] is False
    retries = RunStore(tmp_path / "adapt" / "epoch1_train").read_retries()
    assert [(r["reflection_rerun"], r["success"], r["task_id"]) for r in retries] == [(1, True, first[0]["task_id"])]
    assert retries[0]["trajectory"].endswith("__t0__r1.json") and retries[0]["prompt_tokens"] > 0
    from harness import benchmarks

    bench = benchmarks.create(ace_adapt.compose_job(["model=oracle", "benchmark=tau2_retail",
                                                     "benchmark.split=train"]).benchmark)
    task = next(t for t in bench.tasks() if t.id == first[0]["task_id"])
    prompt = roles.calls[0]["messages"][1]["content"]
    assert "Ground truth" in prompt and bench.gold_solution(task) in prompt  # the task's own gold actions
    assert task.evaluation_criteria.actions[0].name in bench.gold_solution(task)
    rows = [json.loads(line) for line in out.with_name("learned.history.jsonl").read_text().splitlines()]
    assert rows[-1]["rounds"][0]["success"] is True and rows[-1]["ground_truth_shown"] is True


def test_appworld_uses_ace_appworlds_sections():
    from strategies.ace.deltas import apply_operations
    from strategies.ace.roles import curator_system

    ops = [{"type": "ADD", "section": "apis_to_use_for_specific_information", "content": "Use the phone app."},
           {"type": "ADD", "section": "verification_checklist", "content": "Check every page was read."},
           {"type": "ADD", "section": "strategies_and_insights", "content": "A generic-only section."}]
    result = apply_operations(Playbook(), ops, sections="appworld")
    # a generic-only section is unknown on AppWorld: filed under `others`, as the reference does
    assert result.added == ["api-00001", "vc-00002", "misc-00003"] and not result.rejected
    assert result.playbook.get("misc-00003").section == "others"
    rendered = result.playbook.render()
    assert "## APIs TO USE FOR SPECIFIC INFORMATION" in rendered and "## VERIFICATION CHECKLIST" in rendered
    assert "troubleshooting_and_pitfalls" in curator_system(("ADD",), "appworld")
    settings = AceSettings()  # sections: auto
    assert (settings.section_set("appworld"), settings.section_set("tau2_retail")) == ("appworld", "generic")
    roles = install_scripted_roles()
    roles.queue("curator", {"operations": ops})
    world = Trajectory(task=TaskView("appworld", "a1b2c3d_1", "play my playlist"),
                       messages=({"role": "assistant", "content": "done"},), reward=1.0, success=True)
    out, _ = Adapter(reflector=JsonLLM(MODEL), curator=JsonLLM(MODEL), count_tokens=token_counter("gpt-4o"),
                     settings=settings).step(Playbook(), world)
    assert [b.section for b in out.bullets] == ["apis_to_use_for_specific_information", "verification_checklist",
                                                "others"]
    assert "verification_checklist" in roles.calls[-1]["messages"][0]["content"]
    # on AppWorld the Curator reads the whole conversation, as ace-appworld's does
    assert "full conversation of that attempt (agent = assistant):\nassistant: done" in \
        roles.calls[-1]["messages"][1]["content"]
    args = ace_adapt.parse_args(["--val", "3"])
    assert not any("dedup" in o for o in ace_adapt.online_options(args))  # paper default: off
    on = ace_adapt.online_options(ace_adapt.parse_args(["--dedup-threshold", "0.9"]))
    assert "strategy.options.dedup=true" in on and "strategy.options.dedup_threshold=0.9" in on


def test_make_ace_adapts_on_all_train_tasks_minus_the_held_out_ones_by_default():
    args = ace_adapt.parse_args(["model=oracle", "benchmark=tau2_retail", "--val", "5"])
    assert args.train is None
    train, val, bench = ace_adapt.split_tasks(args.overrides, args.train, args.val)
    assert (len(train), len(val), bench) == (74 - 5, 5, "tau2_retail") and not set(train) & set(val)
    assert len(ace_adapt.split_tasks(args.overrides, 10, 5)[0]) == 10
