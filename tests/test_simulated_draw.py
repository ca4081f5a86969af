"""The simulated agent draws ONCE per episode, from its first agent step's prompt (harness/scripted/simulated.py).

With `rerank_each_step` (core_retrieval) or `context_policy=priority_drop` (memory dropped later in a long
episode) the prompt's memory changes from step to step; the outcome must still be one draw from one p, and the
p the trajectory reports must be that one. Checked end to end through the runner and tau2's evaluator, against
world.expected_p of the block the first step delivered.
"""

from __future__ import annotations

import math

import pytest
from conftest import read_records
from tau2.data_model.simulation import Results

from harness.scripted import simulated_world as world
from harness.scripted.simulated import agent_turn, parse_tag
from strategies import render_guidelines
from memory_kit.memory_file import load_memory

TASKS = ["5", "9", "12", "17", "62", "64"]
TRIALS = 2
# full's block is ~4,400 tokens; at this window the first steps fit whole and later steps of every task above
# drop memory (checked below, so a change in prompt sizes cannot make the test vacuous)
DROP_WINDOW = 9400


def _turns(script, prof, w, first_messages, later_system, episode):
    """Play an episode with agent_turn; every step after the first sees `later_system` as its memory."""
    messages, turns = list(first_messages), []
    for _ in range(10):
        turn = agent_turn(messages, script, prof, w, seed=3, episode=episode)
        turns.append(turn)
        if not turn.get("tool_calls"):
            return turns
        messages = [later_system, {"role": "user", "content": "[earlier turns summarised]"}]  # history folded
    raise AssertionError("the agent never finished")


def test_one_draw_per_episode_from_the_first_step(artifact):
    w, prof = world.load_world(artifact), world.PROFILES["strong"]
    guidelines, _ = load_memory(artifact)
    full = {"role": "system", "content": "policy\n" + render_guidelines(guidelines)}
    bare = {"role": "system", "content": "policy"}
    calls = [{"name": f"c{i}", "arguments": {}, "write": False} for i in range(3)]
    script = {"task_id": "5", "gold_calls": calls, "final_message": "done", "communicate": False}
    turns = _turns(script, prof, w, [full], bare, episode="ep-1")
    # the calls are made once each although the folded history shows none of them
    assert [t["tool_calls"][0]["function"]["name"] for t in turns[:-1]] == ["c0", "c1", "c2"]
    tag = parse_tag(turns[-1]["content"])
    first = world.read_prompt([full], w)
    assert first.p(prof, w, "5") > prof.base and tag["p"] == pytest.approx(first.p(prof, w, "5"), abs=1e-6)
    assert tag["u"] == pytest.approx(world.draw("5", 3, first.key), abs=1e-6)
    # without an episode id each call reads its own prompt: the last step saw no memory
    assert parse_tag(agent_turn([bare], script | {"gold_calls": []}, prof, w, seed=3)["content"])["p"] == prof.base


@pytest.fixture(scope="module")
def changing_prompts(artifact, tmp_path_factory):
    """Real jobs whose memory changes within an episode: core_retrieval re-ranking each step, full under
    priority_drop at a small window."""
    from harness.run import check_job, compose_job
    from harness.runner import run_job

    runs_dir = tmp_path_factory.mktemp("simdraw")
    tasks = "[" + ",".join(f"'{t}'" for t in TASKS) + "]"
    common = ["model=simulated", f"model.world={artifact}", "benchmark=tau2_retail", f"benchmark.task_ids={tasks}",
              "benchmark.seed=11", f"benchmark.trials={TRIALS}", f"memory={artifact}", f"runs_dir={runs_dir}",
              "progress=false"]
    jobs = {"rerank": ["strategy=core_retrieval", "strategy.options.rerank_each_step=true", "run_name=rerank"],
            "drop": ["strategy=full", "benchmark.context_policy=priority_drop", f"model.context_window={DROP_WINDOW}",
                     "run_name=drop"]}
    out = {}
    for name, extra in jobs.items():
        cfg = compose_job([*common, *extra])
        check_job(cfg)
        run_job(cfg)
        out[name] = runs_dir / name
    return out


def _tags(run_dir, record):
    sim = Results.load(run_dir / record["trajectory"]).simulations[0]
    return [t for m in sim.messages if m.role == "assistant" and m.content and (t := parse_tag(m.content))]


@pytest.mark.parametrize("job", ["rerank", "drop"])
def test_changing_memory_is_decided_by_the_first_steps_prompt(changing_prompts, artifact, job):
    run_dir = changing_prompts[job]
    w, prof = world.load_world(artifact), world.PROFILES["strong"]
    by_id = {g.id: g for g in load_memory(artifact)[0]}
    records = read_records(run_dir)
    assert len(records) == len(TASKS) * TRIALS
    expected, variance, successes, later_differs = 0.0, 0.0, 0, 0

    def reading(ids):
        return world.read_lines(world.rendered_lines(render_guidelines([by_id[i] for i in ids])), w)

    for r in records:
        assert r["error"] in (None, "agent") and r["termination"] != "max_steps", r["trajectory"]
        first, last = reading(r["delivered"][0]), reading(r["delivered"][-1])
        p = world.expected_p(prof, w, r["task_id"], render_guidelines([by_id[i] for i in r["delivered"][0]]))
        tags = _tags(run_dir, r)
        assert tags and all(t == tags[0] for t in tags), r["trajectory"]  # one draw, whatever the step
        assert tags[0]["p"] == pytest.approx(p, abs=1e-6), r["trajectory"]
        assert tags[0]["u"] == pytest.approx(world.draw(r["task_id"], r["seed"], first.key), abs=1e-6)
        assert r["success"] == (tags[0]["u"] < p) == tags[0]["success"]
        later_differs += first.key != last.key and abs(last.p(prof, w, r["task_id"]) - p) > 1e-9
        expected, variance, successes = expected + p, variance + p * (1 - p), successes + r["success"]
    if job == "drop":  # memory was dropped at a later step, never at the first
        assert all(not r["dropped"][0] for r in records) and all(any(r["dropped"]) for r in records)
    assert later_differs >= len(records) // 4  # the last step's p would have told another story
    # and over the episodes, the success count is the analytic expectation within binomial noise
    assert abs(successes - expected) <= 3 * math.sqrt(variance) + 1
