"""Control arms (docs/controls.md): placebo carries no task information and pays full's length; protocol_only is
the frame alone; the simulated world plants a truth for each, and analysis.views.controls recovers it; recommend never
recommends a control arm."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from analysis.recommend import recommend
from analysis.views import controls
from harness.memory.simulated import _bench, _facts
from strategies import StepView, StrategyContext, TaskView, create
from memory_kit.memory_file import load_memory
from harness.scripted import simulated_world as world
from strategies.base import memory_frame
from memory_kit.budget import token_counter

# NLTK's English stop-word list (the words any two English texts share without telling anything)
STOP = set("""i me my myself we our ours ourselves you your yours yourself yourselves he him his himself she her
hers herself it its itself they them their theirs themselves what which who whom this that these those am is are
was were be been being have has had having do does did doing a an the and but if or because as until while of at
by for with about against between into through during before after above below to from up down in out on off over
under again further then once here there when where why how all any both each few more most other some such no
nor not only own same so than too very s t can will just don should now""".split())


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z]+", text.lower()))


def _tasks(artifact) -> list[str]:
    return load_memory(artifact)[1]["simulated"]["tasks"][:40]


def _arm(name: str, artifact, **options):
    return create(name, StrategyContext(options=options, memory_path=str(artifact), model="gpt-4o"))


def _text(strategy, task_id: str, step: int = 0, description: str = "") -> str:
    return strategy.deliver(TaskView("tau2_retail", task_id, description), StepView(step)).text


def test_placebo_text_carries_no_task_information_and_is_deterministic(artifact):
    guidelines, _ = load_memory(artifact)
    requests = {t: f["request"] for t, f in _facts(_bench("tau2_retail", "test")).items()}
    seen = _words(" ".join(requests.values())) | _words(" ".join(g.text + " " + g.source_task_text
                                                                  for g in guidelines))
    placebo, again = _arm("placebo", artifact), _arm("placebo", artifact)
    frame = set(memory_frame().splitlines())
    texts = {}
    for t in _tasks(artifact)[:8]:
        text = _text(placebo, t, description=requests.get(t, ""))  # shown the task: it must not use it
        assert text == _text(again, t) == _text(placebo, t, step=3)  # per task and step; stable as full's block
        body = "\n".join(line for line in text.splitlines() if line not in frame)
        assert not any(g.id in text for g in guidelines)
        leaked = (_words(body) & seen) - STOP - {"p"}  # `[p1]`: the placebo's own bullet ids
        assert not leaked, f"task {t}: placebo text shares {sorted(leaked)[:10]} with the task or guidelines"
        texts[t] = text
    assert len(set(texts.values())) == len(texts)  # a different neutral passage per task
    assert all(line in texts[t] for t in texts for line in frame)  # under full's own header


@pytest.mark.parametrize("match", ["full", "ace"])
def test_placebo_pays_the_reference_length_in_its_format(artifact, match):
    reference, placebo = _arm(match, artifact), _arm("placebo", artifact, match=match)
    count = token_counter("gpt-4o")
    for t in _tasks(artifact)[:4]:
        ref, text = _text(reference, t), _text(placebo, t)
        assert count(text) == pytest.approx(count(ref), rel=0.02)
        # as the simulated world (and so the harness's memory_tokens for it) counts: its bullet lines
        assert world.block_tokens(text) == pytest.approx(world.block_tokens(ref), rel=0.05)
        assert len(world.rendered_lines(text)) == len(world.rendered_lines(ref))
        assert text.splitlines()[:2] == ref.splitlines()[:2]  # the reference's own header
    assert placebo.record_facts(None) == {"control_arm": f"placebo:{match}"}


def test_placebo_refits_with_its_reference_and_refuses_an_unknown_match(artifact):
    placebo = _arm("placebo", artifact)
    delivery = placebo.deliver(TaskView("tau2_retail", "5", ""), StepView(0))
    small = delivery.refit(400)
    assert token_counter("gpt-4o")(small.text) <= 420 and "omitted to fit the budget" in small.text
    with pytest.raises(ValueError, match="match must be a design that declares its frame"):
        _arm("placebo", artifact, match="core_retrieval")


def test_world_reads_placebo_as_content_free_and_protocol_only_as_the_instruction(artifact):
    w, t = world.load_world(artifact), "5"
    full, placebo, protocol = (_text(_arm(s, artifact), t) for s in ("full", "placebo", "protocol_only"))
    read = {s: world.read_lines(world.rendered_lines(b), w) for s, b in
            (("full", full), ("placebo", placebo), ("protocol_only", protocol), ("none", ""))}
    assert read["full"].delivered and not read["placebo"].delivered
    assert read["protocol_only"].memory_tokens == 0 and read["protocol_only"].instructed
    assert read["protocol_only"].key != read["none"].key  # its prompt differs from none's: it draws apart
    assert read["full"].key == f"{','.join(sorted(read['full'].delivered))}|{read['full'].memory_tokens}"  # as before
    prof = world.PROFILES["strong"]
    assert read["protocol_only"].p(prof, w, t) == read["none"].p(prof, w, t) == prof.base  # planted: 0
    planted = world.Profile("planted", base=0.5, lift=0.0, rot=0.0, threshold=0, instruction=0.1)
    assert read["protocol_only"].p(planted, w, t) == pytest.approx(0.6)  # a non-zero plant is read


def _blocks(artifact) -> dict[str, dict[str, str]]:
    arms = {s: _arm(s, artifact) for s in ("full", "placebo", "protocol_only")}
    return {"none": {t: "" for t in _tasks(artifact)},
            **{s: {t: _text(a, t) for t in _tasks(artifact)} for s, a in arms.items()}}


@pytest.mark.parametrize("profile", ["strong", "small"])
def test_decomposition_recovers_the_planted_truth(artifact, profile):
    prof, w, blocks = world.PROFILES[profile], world.load_world(artifact), _blocks(artifact)
    rate = {s: world.expected_rates(prof, w, b) for s, b in blocks.items()}
    planted = {"content": rate["full"] - rate["placebo"], "length": rate["placebo"] - rate["none"],
               "instruction": rate["protocol_only"] - rate["none"]}
    assert planted["instruction"] == world.INSTRUCTION_EFFECT == 0
    assert (planted["content"] > 0.1) if profile == "strong" else (planted["length"] < -0.2)  # a truth to find
    covered, checks = 0, 0
    for seed in range(20):
        df = pd.DataFrame(world.simulate_records(prof, w, blocks, [seed * 1000 + j for j in range(4)]))
        df["control_arm"] = df["strategy"].map({"placebo": "placebo:full", "protocol_only": "protocol_only"})
        effects, said = controls.decomposition(df, controls.arms(df), n_boot=1000)
        assert [e.name for e in effects] == ["content", "length", "instruction"]
        assert all(e.result.n == 40 and e.pairs == 160 for e in effects)
        assert said[0].startswith("length match: `placebo`")
        for e in effects:
            checks += 1
            covered += e.result.lo - 1e-9 <= planted[e.name] <= e.result.hi + 1e-9
    assert covered >= 0.9 * checks


def _records(success: dict[str, float], tokens: dict[str, int]) -> pd.DataFrame:
    rows = []
    for s, p in success.items():
        for t in range(30):
            for trial in range(2):
                rows.append({"benchmark": "b", "split": "test", "model": "m", "strategy": s, "task_id": str(t),
                             "trial": trial, "success": t < 30 * p, "error": None,
                             "prompt_tokens": tokens[s], "completion_tokens": 10, "memory_tokens": tokens[s] // 2,
                             "steps": 3, "memory": None if s in ("none", "protocol_only") else "mem.jsonl",
                             "run": "r", "run_dir": "nowhere", "job": f"b/test/m/{s}",
                             "control_arm": {"placebo": "placebo:full", "protocol_only": "protocol_only"}.get(s)})
    return pd.DataFrame(rows)


def test_recommend_never_recommends_a_control_arm():
    from analysis.decision import decide

    # the placebo succeeds most and costs least: without the rule it would be the answer
    df = _records({"none": 0.5, "full": 0.8, "placebo": 1.0, "protocol_only": 0.6},
                  {"none": 900, "full": 2000, "placebo": 100, "protocol_only": 50})
    assert decide(("b", "test", "m", ""), df).choice == "placebo"
    rec, = recommend(df)
    assert rec.choice == "full" and not {"placebo", "protocol_only"} & set(rec.candidates)
    said = rec.sentences[-1]
    assert said.startswith("Control arms, never recommended") and "content" in said and "instruction" in said


def test_tables_print_the_decomposition_within_160_columns(capsys, tmp_path):
    from analysis import tables

    df = _records({"none": 0.5, "full": 0.8, "placebo": 0.4, "protocol_only": 0.5, "on_demand": 0.7},
                  {"none": 900, "full": 2000, "placebo": 2000, "protocol_only": 950, "on_demand": 1200})
    text = controls.terminal(df, n_boot=200)
    lines = text.splitlines()
    assert max(map(len, lines)) <= 160
    content = next(line for line in lines if line.lstrip().startswith("content"))
    assert "full - placebo" in content and "+40.0 pts" in content and "on 30 tasks x 2 trials" in content
    assert any("on_demand: success 70.0%" in line and "full 80.0%" in line for line in lines)
    summary = controls.mark(tables.summary_of(df, n_boot=200), df).set_index("strategy")["control_arm"]
    assert summary["placebo"] == "placebo:full" and pd.isna(summary["full"])
    assert controls.terminal(df.assign(control_arm=None)) == ""  # no control arm: no section


def test_plots_mark_control_arms_and_keep_them_off_the_pareto_front(monkeypatch, tmp_path):
    from analysis import tables
    from analysis.views import plots

    df = _records({"none": 0.5, "full": 0.8, "placebo": 0.9, "protocol_only": 0.5},
                  {"none": 900, "full": 2000, "placebo": 100, "protocol_only": 950})
    summary = controls.mark(tables.summary_of(df, n_boot=200), df)
    drawn = {}

    def keep(fig, out_dir, name):
        drawn[name] = fig.axes
        return []

    monkeypatch.setattr(plots, "save", keep)
    plots.success_vs_tokens(summary, tmp_path)
    plots.strategy_bars(summary, tmp_path)
    ax, = drawn["success_vs_tokens"]
    labels = ax.get_legend_handles_labels()[1]
    assert {"placebo (control)", "protocol_only (control)", "full", "none"} <= set(labels)
    front = next(line for line in ax.get_lines() if line.get_label().startswith("Pareto"))
    # the placebo is cheapest and best here: off the front all the same, which is none -> full
    assert list(front.get_xdata()) == sorted(summary.set_index("strategy").loc[["none", "full"], "tokens/task"])
    assert "placebo (control)" in drawn["strategy_bars"][0].get_legend_handles_labels()[1]


def test_one_pair_prints_one_delta_in_the_table_and_the_decomposition():
    """placebo - none = -6 of 160 pairs = -3.75 points exactly; the table's difference of means and the
    decomposition's mean of differences reach it from either side in the last bits (-3.7499999999999982 vs
    -3.75), which two roundings printed as -3.7 and -3.8. One rounding (fmt.signed) prints one number."""
    from analysis import tables
    from analysis.views.displays import compact_display

    none = [i % 20 < 10 for i in range(160)]  # 80 successes, 50 %
    placebo = [ok and i not in (0, 1, 2, 20, 21, 40) for i, ok in enumerate(none)]
    rows = [{"benchmark": "b", "split": "test", "model": "m", "strategy": s, "task_id": str(i // 4), "trial": i % 4,
             "success": won[i], "error": None, "prompt_tokens": 100, "completion_tokens": 10, "memory_tokens": 50,
             "steps": 3, "memory": None if s == "none" else "mem.jsonl", "run": "r", "run_dir": "nowhere",
             "job": f"b/test/m/{s}", "control_arm": {"placebo": "placebo:full"}.get(s)}
            for s, won in (("none", none), ("placebo", placebo), ("full", none)) for i in range(160)]
    df = pd.DataFrame(rows)
    summary = tables.summary_of(df, n_boot=50)
    effects, _ = controls.decomposition(df, controls.arms(df), n_boot=50)
    length, = (e for e in effects if e.name == "length")
    table_value = summary.set_index("strategy").loc["placebo", "Δsuccess_pts"]
    assert table_value != 100 * length.result.diff and round(table_value, 9) == -3.75  # two sums, one pair
    in_table = compact_display(summary).set_index("strategy").loc["placebo", "Δ vs none"]
    in_decomposition = next(line for line in controls.terminal(df, n_boot=50).splitlines() if "length" in line)
    assert in_table.startswith("-3.8 pts") and "-3.8 pts [" in in_decomposition
