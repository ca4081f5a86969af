"""The IBM views pair like with like: IBM's "support≥3" (core guidelines only) gets a measured value only from a
`core_retrieval` run that delivered the core only (top_k 0, read from the run's config.yaml), and the terminal
print of a view fits 160 columns."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from conftest import SAMPLE_MEMORY, run_in_process

from analysis import load_records, summarize
from analysis.runs.deliveries import base_strategy
from analysis.tables import main as tables_main
from analysis.views import ibm

FIXTURES = Path(__file__).parent / "fixtures" / "runs"
ORACLE = ["model.name=memdeliv-scripted/oracle", "model.scripted=true", "model.api_key_env=null",
          "model.max_retries=0"]


def constructed_run(tmp_path: Path, top_k: int | None, provenance: str | None = None) -> Path:
    """The constructed fixture (core_retrieval succeeds on 4,4,1,0 of 4 trials), with a config.yaml whose
    core_retrieval job ran with `top_k` (None: no config.yaml), its memory strategies labelled `provenance`."""
    run = tmp_path / "constructed_mixed"
    shutil.copytree(FIXTURES / "constructed_mixed", run)
    records = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines() if line.strip()]
    if provenance:
        for r in records:
            r["memory_provenance"] = provenance if r["strategy"] != "none" else None
        (run / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    if top_k is not None:
        jobs = {r["job"]: {"identity": {"strategy": {"name": r["strategy"], "options": (
            {"core_support": 3, "min_support": 1, "top_k": top_k} if r["strategy"] == "core_retrieval" else {})}}}
            for r in records}
        (run / "config.yaml").write_text(yaml.safe_dump({"jobs": jobs}))
    return run


def tau2_view(run: Path, published=None):
    records = load_records([run])
    return ibm.view("ibm_tau2", summarize(records, n_boot=100), published=published, records=records,
                    models={"-": "constructed/model-a"})


def measured(table, setting: str, metric: str = "success"):
    rows = table[(table["setting"] == setting) & (table["metric"] == metric) & (table["split"] == "test")
                 & (table["benchmark"] == "tau2_retail") & table["row"].str.startswith("measured")]
    assert len(rows) == 1, rows
    return rows.iloc[0]


def test_core_only_row_gets_our_value_only_from_a_core_only_run(tmp_path):
    core_only = measured(tau2_view(constructed_run(tmp_path / "a", top_k=0)), "support≥3 (core only)")
    assert core_only["value"].startswith("56.2% [")  # 4,4,1,0 of 4
    assert "strategy=core_retrieval, core only (support≥3)" in core_only["note"]

    retrieval = measured(tau2_view(constructed_run(tmp_path / "b", top_k=10)), "support≥3 (core only)")
    assert retrieval["value"] == "n/a: ours core + retrieval"
    assert "core + retrieval (top_k=10), not IBM's core only (support≥3)" in retrieval["note"]
    assert "run strategy=core_only (top_k 0)" in retrieval["note"]

    unknown = measured(tau2_view(constructed_run(tmp_path / "c", top_k=None)), "support≥3 (core only)")
    assert unknown["value"] == "n/a: top_k unknown" and "no config.yaml giving its top_k" in unknown["note"]


def test_a_core_plus_retrieval_row_refuses_a_core_only_run(tmp_path):
    published = ibm.load_published()
    row = (published["view"] == "ibm_tau2") & (published["setting"] == "support≥3 (core only)")
    published.loc[row, "delivery"] = "core + retrieval"  # as IBM's AppWorld "core+retrieval" rows say
    assert measured(tau2_view(constructed_run(tmp_path / "a", top_k=0), published),
                    "support≥3 (core only)")["value"] == "n/a: ours core only (support≥3)"
    assert measured(tau2_view(constructed_run(tmp_path / "b", top_k=10), published),
                    "support≥3 (core only)")["value"].startswith("56.2% [")


def test_published_core_retrieval_rows_all_say_what_they_delivered():
    pub = ibm.load_published()
    ours = pub[pub["strategy"] == "core_retrieval"]
    assert len(ours) and ours["delivery"].isin(["core only (support≥3)", "core + retrieval"]).all()
    assert (ours["setting"].str.startswith("support≥3") == (ours["delivery"] == "core only (support≥3)")).all()
    assert (pub[pub["strategy"] != "core_retrieval"]["delivery"] == "").all()


def test_provenance_labelled_strategies_still_pair(tmp_path):
    table = tau2_view(constructed_run(tmp_path, top_k=0, provenance="unknown provenance"))
    full = measured(table, "full")
    assert full["value"].startswith("62.5% [") and "strategy=full [unknown provenance]" in full["note"]
    core = measured(table, "support≥3 (core only)")
    assert core["value"].startswith("56.2% [") and "core_retrieval [unknown provenance]" in core["note"]


def test_terminal_print_is_narrow_and_keeps_every_note(tmp_path, capsys):
    run = constructed_run(tmp_path, top_k=10)
    table = tau2_view(run)
    text = ibm.terminal(table)
    assert max(map(len, text.splitlines())) <= 160
    flat = " ".join(text.split())
    assert all(" ".join(n.split()) in flat for n in table["note"] if n)  # every note, once, as a footnote
    assert tables_main([str(run), "--experiment", "ibm_tau2", "--model-map=-=constructed/model-a",
                        "--out", str(tmp_path / "out"), "--no-plots"]) == 0
    out = capsys.readouterr().out
    view = out.split("\nibm_tau2:\n", 1)[1].split("\n\n", 1)[0]
    assert "support≥3 (core only)" in view and "n/a: ours core + retrieval" in view
    assert max(map(len, view.splitlines())) <= 160
    assert max(map(len, (tmp_path / "out" / "ibm_tau2.md").read_text().splitlines())) > 160  # the file keeps all


def test_the_experiments_own_sweep_pairs_core_retrieval_with_ibms_core_only_row(tmp_path):
    proc = run_in_process("+experiment=ibm_tau2", *ORACLE, "benchmark=tau2_retail",  # its strategies: none,core_only,full
                          "benchmark.limit=2", "benchmark.trials=1", f"memory={SAMPLE_MEMORY}", "run_name=exp",
                          runs_dir=tmp_path, multirun=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    records = load_records([tmp_path / "exp"])
    table = ibm.view("ibm_tau2", summarize(records, n_boot=50), records=records,
                     models={"-": "memdeliv-scripted/oracle"})
    assert set(records["strategy"].map(base_strategy)) == {"none", "core_retrieval", "full"}
    core = measured(table, "support≥3 (core only)")
    assert core["value"].startswith("100.0% [") and "core only (support≥3)" in core["note"]


@pytest.mark.parametrize("text", ["jobs: [", "- a list"])
def test_a_broken_run_config_is_a_clear_error(tmp_path, text):
    run = constructed_run(tmp_path, top_k=None)
    (run / "config.yaml").write_text(text)
    with pytest.raises(ValueError, match="config.yaml: not a run config"):
        tau2_view(run)
