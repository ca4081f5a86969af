"""`ace` / `ace_online` behind the Strategy protocol, with a SCRIPTED LLM (no language model)."""

from __future__ import annotations

import json
import re
import threading

import pytest

from ace_fakes import MODEL, install_scripted_roles
from analysis import load_memory_history
from analysis.views.plots import memory_growth
from strategies import StepView, StrategyContext, TaskView, Trajectory, create
from memory_kit.memory_file import load_memory
from strategies.ace.adapt import AceSettings, Adapter
from strategies.ace.llm import JsonLLM
from strategies.ace.playbook import load_playbook, Playbook
from strategies.ace.online import AceOnline
from memory_kit.budget import token_counter

SAMPLE = "strategies/samples/ace_sample_playbook.jsonl"
GUIDELINES = "strategies/samples/tau2_sample.jsonl"
TASK = TaskView("tau2_retail", "3", "exchange two items")
STEP = StepView(index=0)


def episode(task_id: str, text: str = "done") -> Trajectory:
    return Trajectory(task=TaskView("tau2_retail", task_id, "t"), messages=({"role": "assistant", "content": text},),
                      reward=1.0, success=True)


def test_ace_delivers_the_whole_rendered_playbook_every_step():
    strategy = create("ace", StrategyContext(memory_path=SAMPLE, model="gpt-4o"))
    playbook, _ = load_playbook(SAMPLE)
    first, later = strategy.deliver(TASK, STEP), strategy.deliver(TASK, StepView(index=9))
    assert first is later and first.text == playbook.render()
    assert first.ids == [b.id for b in playbook.bullets] and strategy.state is None


def test_ace_takes_a_guideline_file_or_a_playbook_option_and_checks_options():
    converted = create("ace", StrategyContext(memory_path=GUIDELINES))
    n_guidelines = len(load_memory(GUIDELINES)[0])
    assert converted.deliver(TASK, STEP).text.count(" helpful=0 harmful=0 :: ") == n_guidelines
    chosen = create("ace", StrategyContext(memory_path=GUIDELINES, options={"playbook": SAMPLE}))
    assert "[str-00001] helpful=4 harmful=0 ::" in chosen.deliver(TASK, STEP).text
    with pytest.raises(ValueError, match="needs a playbook"):
        create("ace", StrategyContext())
    with pytest.raises(ValueError, match=r"unknown option\(s\) \['token_budgt'\]"):
        create("ace", StrategyContext(memory_path=SAMPLE, options={"token_budgt": 5}))


def test_ace_trims_a_playbook_over_budget_and_records_it(tmp_path):
    count = token_counter("gpt-4o")
    playbook, _ = load_playbook(SAMPLE)
    # highest harmful - helpful is 0 (misc-00007, never used): it goes first; err-00003 (2 vs 1) stays
    budget = count(playbook.remove("misc-00007").render())
    strategy = create("ace", StrategyContext(memory_path=SAMPLE, model="gpt-4o", artifacts_dir=tmp_path,
                                             options={"playbook_token_budget": budget, "enforce_budget": True}))
    assert strategy.deliver(TASK, STEP).ids == [b.id for b in playbook.bullets if b.id != "misc-00007"]
    row = json.loads((tmp_path / "history.jsonl").read_text())
    assert row["event"] == "load" and [d["id"] for d in row["dropped"]] == ["misc-00007"]


def online(tmp_path, playbook: Playbook | None = None) -> AceOnline:
    adapter = Adapter(reflector=JsonLLM(MODEL), curator=JsonLLM(MODEL), count_tokens=token_counter("gpt-4o"),
                      settings=AceSettings(dedup_threshold=None))
    return AceOnline(playbook or Playbook(), adapter=adapter, artifacts_dir=tmp_path, meta={"source": None})


def test_online_updates_save_history_and_snapshots(tmp_path):
    roles = install_scripted_roles()
    strategy = online(tmp_path)
    assert strategy.state is strategy and strategy.deliver(TASK, STEP).empty
    roles.queue("curator", {"operations": [
        {"type": "ADD", "section": "others", "content": "Greet, then authenticate."}]})
    strategy.learn(episode("1"))
    roles.queue("reflector", {"error_analysis": "", "key_insight": "k",
                              "bullet_tags": [{"id": "misc-00001", "tag": "helpful"}]})
    roles.queue("curator", {"operations": [{"type": "ADD", "section": "strategies", "content": "Confirm writes."},
                                           {"type": "REMOVE", "id": "nope-00009"}]})
    strategy.learn(episode("2", "I followed [misc-00001]."))
    delivered = strategy.deliver(TASK, STEP)
    assert delivered.ids == ["str-00002", "misc-00001"] and "[misc-00001] helpful=1 harmful=0" in delivered.text
    history = [json.loads(line) for line in (tmp_path / "history.jsonl").read_text().splitlines()]
    assert [h["update"] for h in history] == [0, 1, 2] and [h["bullets"] for h in history] == [0, 1, 2]
    assert history[2]["tags"] == {"misc-00001": "helpful"} and len(history[2]["deltas"]["rejected"]) == 1
    assert history[2]["tokens"] == token_counter("gpt-4o")(delivered.text) and history[2]["usage"]["curator"]
    assert [p.name for p in sorted((tmp_path / "snapshots").iterdir())] == [
        "playbook_0000.jsonl", "playbook_0001.jsonl", "playbook_0002.jsonl"]
    assert len(load_playbook(tmp_path / "snapshots" / "playbook_0001.jsonl")[0]) == 1
    latest, meta = load_playbook(tmp_path / "playbook.jsonl")
    assert latest == strategy.playbook and meta["updates"] == 2 and meta["reflector_model"] == MODEL
    history = [json.loads(line) for line in (tmp_path / "history.jsonl").read_text().splitlines()]
    assert [len(h.get("deltas", {}).get("rejected", [])) for h in history] == [0, 0, 1]
    run = tmp_path / "run"  # what the growth plot reads: <run>/memory/<job>/history.jsonl
    (run / "memory" / "job").mkdir(parents=True)
    (run / "memory" / "job" / "history.jsonl").write_text((tmp_path / "history.jsonl").read_text())
    growth = load_memory_history([run])
    assert growth["guidelines"].tolist() == [0, 1, 2] and set(growth["strategy"]) == {"ace_online"}
    pngs = [p for p in memory_growth(growth, tmp_path / "plots") if p.suffix == ".png"]
    assert pngs and pngs[0].stat().st_size > 1000


def test_build_replays_stored_episodes_as_updates(tmp_path):
    roles = install_scripted_roles()
    for text in ("First lesson.", "Second lesson."):
        roles.queue("curator", {"operations": [{"type": "ADD", "section": "others", "content": text}]})
    strategy = online(tmp_path)
    strategy.build([episode("1"), episode("2")])
    assert [b.content for b in strategy.playbook.bullets] == ["First lesson.", "Second lesson."]
    assert strategy.updates == 2


def test_online_resumes_from_its_committed_stream(tmp_path):
    roles = install_scripted_roles()
    roles.queue("curator", {"operations": [{"type": "ADD", "section": "others", "content": "Be precise."}]})
    first = online(tmp_path)
    first.learn(episode("1"))
    ctx = StrategyContext(artifacts_dir=tmp_path, model="gpt-4o", options={"reflector_model": MODEL,
                                                                           "curator_model": MODEL,
                                                                           "dedup_threshold": None})
    resumed = create("ace_online", ctx)
    assert resumed.updates == 0 and resumed.deliver(TASK, STEP).ids == []  # the run's committed state decides
    resumed.state.restore(0, first.state.snapshot(0))  # as the harness restores it (harness/runner/stream_state.py)
    assert resumed.updates == 1 and resumed.deliver(TASK, STEP).ids == ["misc-00001"]
    resumed.learn(episode("2"))
    assert json.loads((tmp_path / "history.jsonl").read_text().splitlines()[-1])["update"] == 2


def test_deliver_from_threads_while_updating_sees_whole_playbooks(tmp_path):
    roles = install_scripted_roles()
    strategy = online(tmp_path)
    for i in range(6):
        roles.queue("curator", {"operations": [{"type": "ADD", "section": "others", "content": f"Lesson {i}."}]})
    seen, stop = [], threading.Event()

    def reader():
        while not stop.is_set():
            d = strategy.deliver(TASK, STEP)
            seen.append(re.findall(r"^\[([a-z]+-\d+)\] helpful=", d.text, re.M) == d.ids)

    threads = [threading.Thread(target=reader) for _ in range(3)]
    for t in threads:
        t.start()
    for i in range(6):
        strategy.learn(episode(str(i)))
    stop.set()
    for t in threads:
        t.join()
    assert seen and all(seen) and len(strategy.playbook) == 6


def test_online_without_a_role_model_fails_clearly(tmp_path):
    with pytest.raises(ValueError, match="no model for the reflector"):
        create("ace_online", StrategyContext(options={"dedup_threshold": None}))
