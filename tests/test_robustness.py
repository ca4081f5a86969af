"""Bad memory as an axis (+experiment=robustness, docs/robustness.md): its cells are distinct jobs over the
corrupted artifacts, and on the SIMULATED world the robustness curves recover the planted shape — `full` falls
with the contradicted share, `core_retrieval` falls less, less still when the corrupted lessons have low
support — first on the analytic expectation (the world's arithmetic on what each strategy delivers), then
through the analysis from records drawn as a sweep draws them (world.simulate_records, tests/test_dose.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ace_fakes import FakeBagOfWordsEmbedder

from analysis import load_records, summarize
from analysis.runs import corruption
from analysis.views import robustness
from analysis.views.plots import dose_response
from analysis.views.plots import robustness as robustness_plot
from harness.memory.corrupt import Spec, corrupt, series_path
from strategies import render_guidelines
from memory_kit.memory_file import load_memory
from harness.scripted import simulated_world as world
from strategies.ace.playbook import Playbook
from strategies import StepView, TaskView
from strategies.core_retrieval import CoreRetrieval

RATES = (0, 10, 30, 50)
STRATEGIES = ("full", "core_retrieval", "ace")


def test_the_experiment_is_one_none_and_a_cell_per_strategy_and_rate():
    from conftest import compose

    from harness.config import register_schemas
    from harness.run import expand_sweeps, with_config_sweeps
    from harness.runner import job_key

    register_schemas()
    cfgs = [compose(*job) for job in expand_sweeps(with_config_sweeps(
        ["+experiment=robustness", "model=oracle", "memory=m.jsonl", "analysis.robustness.dir=/c"]))]
    assert len(cfgs) == 1 + len(STRATEGIES) * len(RATES) and len({job_key(c) for c in cfgs}) == len(cfgs)
    cell = next(c for c in cfgs if c.strategy.variant == "contradict=30%" and c.strategy.name == "full")
    assert cell.job_memory == "/c/contradict_30.jsonl" and job_key(cell).endswith("/full(contradict=30%)")
    assert cell.model.world == "/c/contradict_30.jsonl"  # read by model=simulated: the planted harm is this one's
    none = next(c for c in cfgs if c.strategy.name == "none")
    assert not none.strategy.variant and none.job_memory in (None, "m.jsonl")
    ace = next(c for c in cfgs if c.strategy.variant == "contradict=10%" and c.strategy.name == "ace")
    assert ace.strategy.options["playbook"] == "/c/contradict_10.jsonl"  # ace's own option: memory_by_strategy.ace
    stale = compose("+experiment=robustness", "strategy=robustness/core_retrieval_r10", "analysis.robustness.kind=stale")
    assert stale.job_memory == "runs/memory/robustness/stale_10.jsonl" and stale.strategy.variant == "stale=10%"


def series(artifact: Path, out: Path, pick: str) -> dict[int, Path]:
    for rate in RATES:
        corrupt(artifact, series_path(out, "contradict", rate / 100), Spec("contradict", rate / 100, pick=pick))
    return {rate: series_path(out, "contradict", rate / 100) for rate in RATES}


@pytest.fixture(scope="module")
def requests():
    from harness.memory.simulated import _bench

    return {str(t.id): t.user_scenario.instructions.reason_for_call for t in _bench("tau2_retail", "test").tasks()}


def blocks(path: Path, requests: dict[str, str]) -> dict[str, dict[str, str]]:
    """strategy -> task -> the block it delivers on the user's request, over the artifact at `path`."""
    guidelines, _ = load_memory(path)
    core = CoreRetrieval(options={"embed_cache": None}, guidelines=tuple(guidelines), embedder=FakeBagOfWordsEmbedder())
    said = lambda r: StepView(1, ({"role": "assistant", "content": "Hi"}, {"role": "user", "content": r}))  # noqa: E731
    full, ace = render_guidelines(guidelines), Playbook.from_guidelines(guidelines).render()
    return {"full": {t: full for t in requests}, "ace": {t: ace for t in requests},
            "core_retrieval": {t: core.deliver(TaskView("tau2_retail", t, ""), said(r)).text for t, r in requests.items()}}


@pytest.fixture(scope="module")
def curves(artifact, requests, tmp_path_factory):
    """pick -> rate -> (artifact, strategy -> task -> block)."""
    out = {}
    for pick in ("random", "low_support"):
        paths = series(artifact, tmp_path_factory.mktemp(pick), pick)
        out[pick] = {rate: (path, blocks(path, requests)) for rate, path in paths.items()}
    return out


def expected(curve, strategy: str, profile: str = "strong") -> list[float]:
    prof = world.PROFILES[profile]
    return [world.expected_rates(prof, world.load_world(path), per[strategy]) for path, per in curve.values()]


def test_planted_shape_analytically(curves):
    full, core = expected(curves["random"], "full"), expected(curves["random"], "core_retrieval")
    assert all(a > b for a, b in zip(full, full[1:]))  # full falls at every step
    assert full[0] - full[-1] > 0.4 and full[-1] < world.PROFILES["strong"].base  # ... below none at 50 %
    assert core[0] - core[-1] < 0.5 * (full[0] - full[-1])  # core_retrieval falls less
    assert expected(curves["random"], "ace") == pytest.approx(full, abs=0.01)  # the whole playbook, as full
    weak = expected(curves["low_support"], "core_retrieval")
    assert weak[0] - weak[-1] < core[0] - core[-1]  # corrupted lessons of low support: less still
    small = expected(curves["random"], "full", "small")
    assert small[-1] < small[0] < world.PROFILES["small"].base  # small: full already below none, and falls


def write_run(run_dir: Path, curve, trials: int) -> None:
    prof, rows = world.PROFILES["strong"], []
    for rate, (path, per) in curve.items():
        w = world.load_world(path)
        named = {"none": {t: "" for t in per["full"]}} if rate == 0 else {}
        named |= {f"{s}|contradict={rate}%": per[s] for s in STRATEGIES}
        for row in world.simulate_records(prof, w, named, trial_seeds=list(range(trials)), run=run_dir.name):
            strategy, _, variant = row["strategy"].partition("|")
            row.update(strategy=strategy, job=f"{row['job'].rsplit('/', 1)[0]}/{strategy}" + (f"({variant})" if variant
                                                                                         else ""))
            if variant:
                row["strategy_variant"] = variant
            rows.append(row)
    run_dir.mkdir(parents=True)
    (run_dir / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_the_analysis_recovers_the_planted_curves(curves, tmp_path):
    write_run(tmp_path / "run", curves["random"], trials=6)
    summary = summarize(load_records([tmp_path / "run"]), n_boot=200)
    [cell] = robustness.points(summary).values()
    points, (_base, base_lo, base_hi) = cell["points"], cell["baseline"]
    assert set(points["family"]) == set(STRATEGIES) and set(points["rate"]) == set(RATES)
    for name in STRATEGIES:  # each point near its analytic expectation
        measured = points[points["family"] == name].sort_values("rate")["success"].tolist()
        assert max(abs(m - e) for m, e in zip(measured, expected(curves["random"], name))) < 0.07
    drop = robustness.slopes(points)
    assert drop["full"] > 35 and drop["core_retrieval"] < drop["full"] - 15  # the planted ordering, resolved
    full = points[points["family"] == "full"].set_index("rate")
    assert full.loc[0, "lo"] > base_hi and full.loc[50, "hi"] < base_lo  # above none clean, below it at 50 %
    pngs = [p.name for p in robustness_plot(summary, tmp_path / "plots") if p.suffix == ".png"]
    assert pngs == ["robustness.png"] and (tmp_path / "plots" / "robustness.png").stat().st_size > 5000
    assert dose_response(summary, tmp_path / "plots") == []  # corrupted cells are not doses


def test_labels_name_the_corruption(artifact, tmp_path):
    assert corruption.corruption_of("full (contradict=30%)") == ("contradict", 30.0)
    assert corruption.corruption_of("core_retrieval [corrupted: stale 10%]") == ("stale", 10.0)
    assert corruption.corruption_of("core_retrieval (top_k=3)") is None
    assert corruption.tag({"corrupted": {"kind": "duplicate", "rate": 0.25}}) == "corrupted: duplicate 25%"
    assert corruption.tag({"learned_from": {}}) is None
    bad = tmp_path / "bad.jsonl"
    corrupt(artifact, bad, Spec("contradict", 0.3))
    run = tmp_path / "run"  # a plain sweep over a corrupted artifact: its row says so, the none row does not
    run.mkdir()
    rows = [{"run": "run", "job": f"b/s/m/{s}", "benchmark": "b", "split": "s", "model": "m", "strategy": s,
             "task_id": "1", "trial": 0, "success": True, "error": None, "memory": str(bad),
             "memory_provenance": None if s == "none" else "held-out"} for s in ("none", "full")]
    (run / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert sorted(load_records([run])["strategy"]) == ["full [corrupted: contradict 30%]", "none"]


def test_a_corruption_is_said_once_and_a_zero_rate_is_the_clean_artifact(artifact, tmp_path):
    """Issue 37: the 0 % rows read `full (contradict=0%) [corrupted: contradict 0%]`: a clean artifact labelled
    corrupted, the variant said twice. Now a 0 % artifact is clean, a variant naming the corruption takes no tag,
    and the displays print the rate in its own column."""
    import pandas as pd

    assert corruption.tag({"corrupted": {"kind": "contradict", "rate": 0.0}}) is None
    paths = {}
    for rate in (0.0, 0.3):
        paths[rate] = tmp_path / f"contradict_{int(100 * rate)}.jsonl"
        corrupt(artifact, paths[rate], Spec("contradict", rate))
    df = pd.DataFrame({"strategy": ["full (contradict=0%)", "full (contradict=30%)", "full"],
                       "memory": [str(paths[0.0]), str(paths[0.3]), str(paths[0.3])]})
    assert list(corruption.corruption_labels(df)) == ["full (contradict=0%)", "full (contradict=30%)",
                                                      "full [corrupted: contradict 30%]"]
    labels = ["none", "full (contradict=0%)", "full [unknown provenance, corrupted: stale 10%]"]
    shown = corruption.corruption_column(pd.DataFrame({"strategy": labels}))
    assert list(shown.columns) == ["strategy", "corrupted"]
    assert list(shown["strategy"]) == ["none", "full", "full [unknown provenance]"]
    assert list(shown["corrupted"]) == ["-", "contradict 0%", "stale 10%"]
    plain = pd.DataFrame({"strategy": ["none", "full"]})
    assert corruption.corruption_column(plain) is plain  # nothing corrupted: no column
