"""The SIMULATED world: a known answer, and the measuring chain must find it.

Two halves, and why together they suffice:
1. `test_real_chain_*`: one small real sweep through the CLI (strategy -> delivery -> rendered prompt ->
   simulated agent -> tau2 orchestrator and evaluator -> record -> trajectory). Every episode's recorded draw
   must equal the analytic p for what the record says was delivered, its success must equal (u < p), and a
   failed draw must fail tau2's own DB / communicate check. That proves a real episode's outcome is exactly
   `world.succeeds(expected_p(...))` — nothing in the chain adds, loses or bends an effect.
2. `test_calibration_*`: given (1), a sweep's records are fully determined by `world.simulate_records`
   (the same p, the same draw), so 40 seeds x 40 tasks x 4 trials x 3 strategies (19,200 episodes, hours of
   real tau2) are generated in milliseconds and fed to the analysis's own statistics (metrics.summarize,
   metrics.paired_comparisons). Coverage of the planted Δ and of the analytic Pass^k is then a property of
   those statistics, measured over seeds.
Pass^k is checked where its expectation is >= 5% (see the test). 40 seeds: a 95% interval's coverage over
40 seeds falls under 90% by chance with probability ~6% when it truly is 95%; the seeds are fixed, so the test
is deterministic.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd
import pytest
from conftest import read_records
from tau2.data_model.simulation import Results

from analysis import paired_comparisons, summarize
from harness.scripted import simulated_world as world
from harness.scripted.simulated import agent_turn, parse_tag
from strategies import render_guidelines
from memory_kit.memory_file import load_memory, save_memory

# a return (many planted helpers); a task with no write at all; a task whose only gold write fails in tau2's own
# replay (so leaving it out would not fail the DB check: the agent must fail it another way)
REAL_TASKS = ["5", "62", "12"]



def test_artifact_plants_relevance_for_retrieval_and_full(artifact):
    guidelines, meta = load_memory(artifact)
    helps = meta["simulated"]["helps"]
    assert set(helps) == {g.id for g in guidelines}
    core = [g for g in guidelines if g.support >= 3]
    assert core and all(g.id.startswith("sim-core-") for g in core)
    assert all(g.source_task_text for g in guidelines)
    assert meta["learned_from"]["split"] == "train" and meta["learned_from"]["ground_truth"] is True
    assert {t for g in guidelines for t in g.source_task_ids} <= set(meta["learned_from"]["task_ids"])
    w = world.load_world(artifact)
    assert w.relevant_ids("5", [g.id for g in guidelines]) and not w.relevant_ids("62", [g.id for g in guidelines])


def test_a_relative_world_path_is_the_file_in_the_current_folder(artifact, tmp_path, monkeypatch):
    """load_world memoises by file version: the same relative path in another folder, even with the same
    modification time, is another world (the second artifact here plants no help at all)."""
    guidelines, meta = load_memory(artifact)
    here, there = tmp_path / "a", tmp_path / "b"
    for folder, simulated in ((here, meta["simulated"]), (there, {**meta["simulated"], "helps": {}})):
        folder.mkdir()
        save_memory(folder / "memory.jsonl", guidelines, {**meta, "simulated": simulated})
        os.utime(folder / "memory.jsonl", ns=(1_700_000_000_000_000_000,) * 2)
    monkeypatch.chdir(here)
    assert world.load_world("memory.jsonl").helps
    monkeypatch.chdir(there)
    assert world.load_world("memory.jsonl").helps == {}


def test_the_agent_reads_only_what_the_prompt_carries(artifact):
    w = world.load_world(artifact)
    guidelines, _ = load_memory(artifact)
    helpers = [g for g in guidelines if "5" in w.helps[g.id]]
    block = render_guidelines(helpers)
    policy = {"role": "system", "content": "policy text\n" + block}
    full = world.read_prompt([policy], w)
    assert set(full.delivered) == {g.id for g in helpers} and full.memory_tokens > 0
    # end_of_conversation: the same block as a trailing system message reads the same
    assert world.read_prompt([{"role": "system", "content": "policy"}, {"role": "user", "content": "hi"},
                              {"role": "system", "content": block}], w) == full
    # first_user_message: the block prepended to the first user message reads the same too
    assert world.read_prompt([{"role": "system", "content": "policy"},
                              {"role": "user", "content": block + "\n\nhi"}], w) == full
    # a block in a tool result or an assistant turn is not memory; a truncated bullet is not delivered but costs tokens
    assert world.read_prompt([{"role": "tool", "content": block}, {"role": "assistant", "content": block}],
                             w).delivered == ()
    cut = block.replace(helpers[0].text, helpers[0].text[:20])
    read = world.read_prompt([{"role": "system", "content": cut}], w)
    assert helpers[0].id not in read.delivered and read.memory_tokens > 0
    # ACE's bullet format, with renamed ids, still carries the text
    ace = "\n".join(f"[str-{i:05d}] helpful=0 harmful=1 :: {g.text}" for i, g in enumerate(helpers))
    assert set(world.read_prompt([{"role": "system", "content": ace}], w).delivered) == {g.id for g in helpers}
    prof = world.PROFILES["strong"]
    assert full.p(prof, w, "5") == prof.p(len(helpers), full.memory_tokens) > prof.base


def test_the_dropped_write_is_one_the_db_check_sees():
    from harness.benchmarks.tau2.adapter import Tau2Benchmark
    from harness.config import section_settings
    from harness.settings import BenchmarkSettings

    bench = Tau2Benchmark(section_settings(BenchmarkSettings, {"name": "tau2_retail", "domain": "retail",
                                                               "split": "test", "task_ids": ["5", "12"]}))
    by_id = {t.id: t for t in bench.tasks()}
    script = bench.oracle_script(by_id["5"], find_drop=True)
    assert script["gold_calls"][script["drop"]]["name"] == "return_delivered_order_items"
    assert bench.oracle_script(by_id["12"], find_drop=True)["drop"] is None  # its gold return fails in replay
    assert "drop" not in bench.oracle_script(by_id["5"])  # the oracle does not need it


def test_a_failed_draw_drops_the_last_write(artifact):
    w, prof = world.load_world(artifact), world.Profile("zero", 0.0, 0.0, 0.0, 0)  # every draw fails
    calls = [{"name": "read", "arguments": {}, "write": False}, {"name": "w1", "arguments": {}, "write": True},
             {"name": "w2", "arguments": {}, "write": True}, {"name": "read2", "arguments": {}, "write": False}]
    script = {"task_id": "5", "gold_calls": calls, "final_message": "done", "communicate": True}
    made, messages = [], [{"role": "system", "content": "p"}]
    for _ in range(6):
        turn = agent_turn(messages, script, prof, w, seed=1)
        messages.append(turn)
        if not turn.get("tool_calls"):
            break
        made.append(turn["tool_calls"][0]["function"]["name"])
    assert made == ["read", "w1", "read2"]
    assert parse_tag(messages[-1]["content"])["success"] is False


@pytest.fixture(scope="module")
def real_sweep(artifact, tmp_path_factory):
    """Real jobs, in-process (the CLI path is the same run_job; in-process saves two interpreter starts)."""
    from harness.run import check_job, compose_job
    from harness.runner import run_job

    runs_dir = tmp_path_factory.mktemp("simruns")
    tasks = "[" + ",".join(f"'{t}'" for t in REAL_TASKS) + "]"
    common = ["model=simulated", f"model.world={artifact}", "benchmark=tau2_retail", f"benchmark.task_ids={tasks}",
              "benchmark.seed=7", f"memory={artifact}", f"runs_dir={runs_dir}", "progress=false"]
    jobs = [[*common, f"strategy={s}", "benchmark.trials=2", "run_name=sim"] for s in ("none", "full")]
    # the cache-hostile placement: the block arrives as a trailing system message, and must still count
    jobs.append([*common, "strategy=full", "benchmark.placement=end_of_conversation", "run_name=sim/eoc"])
    for overrides in jobs:
        cfg = compose_job(overrides)
        check_job(cfg)
        run_job(cfg)
    return runs_dir / "sim"


def _drawn(run_dir: Path, record: dict) -> tuple[dict, object]:
    sim = Results.load(run_dir / record["trajectory"]).simulations[0]
    tags = [parse_tag(m.content) for m in sim.messages if m.role == "assistant" and m.content]
    tags = [t for t in tags if t]
    assert tags, f"no simulated draw in {record['trajectory']}"
    return tags[-1], sim.reward_info


def test_real_chain_outcome_is_the_planted_probability(real_sweep, artifact):
    records = [{**r, "_dir": real_sweep} for r in read_records(real_sweep)]
    records += [{**r, "_dir": real_sweep / "eoc"} for r in read_records(real_sweep / "eoc")]
    assert len(records) == 2 * len(REAL_TASKS) * 2 + len(REAL_TASKS)
    assert {r["task_id"] for r in records if not r["success"]} >= {"12"}  # the hard case was exercised
    assert {r["placement"] for r in records} == {"after_policy", "end_of_conversation"}
    assert {r["model"] for r in records} == {"memdeliv-simulated/strong"}
    w, prof = world.load_world(artifact), world.PROFILES["strong"]
    by_id = {g.id: g for g in load_memory(artifact)[0]}
    outcomes = set()
    for r in records:
        drawn, reward_info = _drawn(r["_dir"], r)
        delivered = r["delivered"][0] if r["delivered"] else []  # the draw is made from the first step's prompt
        block = render_guidelines([by_id[i] for i in delivered])
        reading = world.read_lines(world.rendered_lines(block), w)
        assert drawn["p"] == pytest.approx(reading.p(prof, w, r["task_id"]), abs=1e-6), r["trajectory"]
        assert drawn["p"] == pytest.approx(world.expected_p(prof, w, r["task_id"], block), abs=1e-6)
        assert drawn["u"] == pytest.approx(world.draw(r["task_id"], r["seed"], reading.key), abs=1e-6)
        assert r["success"] == (drawn["u"] < drawn["p"]) == drawn["success"]
        assert r["error"] in (None, "agent")  # "agent": the no-write, nothing-to-say task failing its draw
        if not drawn["success"] and r["task_id"] == "5":
            assert reward_info.db_check is not None and reward_info.db_check.db_match is False
        if not drawn["success"]:
            assert r["reward"] == 0.0
        outcomes.add(r["success"])
    assert outcomes == {True, False}  # a mix, so both branches above were checked
    full = [r for r in records if r["strategy"] == "full" and r["task_id"] == "5"]
    helpers = len(w.relevant_ids("5", by_id))
    assert helpers > 5 and len(full) == 3
    assert all(_drawn(r["_dir"], r)[0]["relevant"] == helpers for r in full)  # both placements reached it
    manifest = json.loads((real_sweep / "manifest.json").read_text())
    assert any("SIMULATED" in n for n in manifest["notes"])


def _blocks(artifact: Path, tasks: list[str]) -> dict[str, dict[str, str]]:
    guidelines, _ = load_memory(artifact)
    core = [g for g in guidelines if g.support >= 3]
    full, core_block = render_guidelines(guidelines), render_guidelines(core)
    return {"none": {t: "" for t in tasks}, "full": {t: full for t in tasks}, "core": {t: core_block for t in tasks}}


def _eval_tasks(artifact: Path) -> list[str]:
    _, meta = load_memory(artifact)
    return meta["simulated"]["tasks"][:40]  # what LIMIT=40 runs: the split's first 40 tasks


@pytest.mark.parametrize("profile", ["strong", "small"])
def test_calibration_ci_covers_planted_delta_and_pass_k(artifact, profile):
    prof, w = world.PROFILES[profile], world.load_world(artifact)
    tasks = _eval_tasks(artifact)
    assert len(tasks) == 40
    blocks = _blocks(artifact, tasks)
    planted = {s: world.expected_rates(prof, w, b) - world.expected_rates(prof, w, blocks["none"])
               for s, b in blocks.items() if s != "none"}
    # Pass^k cells whose expectation is >= 5%: below that most seeds see no task pass k times and the
    # percentile bootstrap collapses to [0, 0] (a known limit of that CI for rare events; docs/deciding.md)
    expected_pk = {(s, k): v for s, b in blocks.items() for k in (1, 2, 4)
                   if (v := world.expected_rates(prof, w, b, k)) >= 0.05}
    seeds = range(40)
    covered_delta = covered_pk = checks_pk = 0
    for seed in seeds:
        df = pd.DataFrame(world.simulate_records(prof, w, blocks, [seed * 1000 + j for j in range(4)]))
        pairs = paired_comparisons(df, n_boot=1000)
        for s, delta in planted.items():
            row = pairs[(pairs["a"] == s) & (pairs["b"] == "none")].iloc[0]
            covered_delta += row["diff_lo"] - 1e-9 <= 100 * delta <= row["diff_hi"] + 1e-9
        summary = summarize(df, n_boot=1000).set_index("strategy")
        for (s, k), value in expected_pk.items():
            col = "success" if k == 1 else f"pass^{k}"
            checks_pk += 1
            covered_pk += summary.loc[s, f"{col}_lo"] - 1e-9 <= value <= summary.loc[s, f"{col}_hi"] + 1e-9
    assert covered_delta >= 0.9 * len(seeds) * len(planted)
    assert covered_pk >= 0.9 * checks_pk
    # and the world is IBM's shape: memory helps the strong profile, a long block hurts the small one
    assert (planted["full"] > planted["core"] > 0) if profile == "strong" else (planted["full"] < 0)


def test_the_artifact_is_refused_on_its_own_train_tasks(artifact):
    """The world's memory is learned from train: a sweep of the train tasks with it is in-sample and refused,
    the test split (what the README sweeps) is not."""
    from harness.run import ConfigError, check_job, compose_job

    base = ["model=simulated", f"model.world={artifact}", "strategy=full", "benchmark=tau2_retail",
            "benchmark.limit=3", f"memory={artifact}"]
    with pytest.raises(ConfigError, match="learned from 3 of the tau2_retail tasks"):
        check_job(compose_job([*base, "benchmark.split=train"]))
    check_job(compose_job([*base, "benchmark.split=test"]))


def test_config_errors_name_the_fix(artifact, tmp_path):
    from harness.run import ConfigError, check_job, compose_job

    base = ["model=simulated", "strategy=none", "benchmark=tau2_retail", "benchmark.limit=1"]
    with pytest.raises(ConfigError, match="make simulated-memory"):
        check_job(compose_job([*base, f"model.world={tmp_path / 'absent.jsonl'}"]))
    with pytest.raises(ConfigError, match="unknown simulated profile 'huge'"):
        check_job(compose_job([*base, f"model.world={artifact}", "model.profile=huge"]))
    plain = tmp_path / "plain.jsonl"
    plain.write_text('{"id": "g", "text": "t"}\n')
    with pytest.raises(ConfigError, match="not a simulated-world artifact"):
        check_job(compose_job([*base, f"model.world={plain}"]))
    cfg = compose_job([*base, f"model.world={artifact}", "model.profile=small"])
    check_job(cfg)
    assert cfg.model.name == "memdeliv-simulated/small"  # the name carries the profile
