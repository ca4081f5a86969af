"""The analysis outputs: IBM views render published numbers as published, make tables/report write files, notebook runs."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pandas as pd
import pytest
from conftest import HUNG_S, main_in_process
import yaml

from analysis import fmt, load_records, summarize
from analysis.tables import main as tables_main
from analysis.views import ibm

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).parent / "fixtures" / "runs"


def test_ibm_token_view_renders_published_numbers_exactly():
    table = ibm.view("ibm_appworld_models")
    lines = ibm.token_lines(table)
    src = "published (IBM blog altk-evolve-hmm)"
    assert f"{src}: appworld gpt-oss-120b tokens/task none → full: 110K → 166K (+51%)" in lines
    assert f"{src}: appworld gpt-oss-120b tokens/task none → core+retrieval: 116K → 116K (+5%)" not in lines
    assert f"{src}: appworld gpt-oss-120b tokens/task none → core+retrieval: 110K → 116K (+5%)" in lines
    assert f"{src}: appworld DeepSeek-V3.2 tokens/task none → full: 148K → 263K (+78%)" in lines
    tgc = table[(table["metric"] == "tgc") & (table["model"] == "gpt-oss-120b")].set_index("setting")["value"]
    assert tgc["none"] == "39.9" and tgc["core+retrieval (best)"] == "56.0"
    assert table["row"].str.startswith("published (").all()  # nothing measured was given


def test_published_file_is_consistent_with_itself():
    pub = ibm.load_published()
    assert pub["source"].str.len().gt(20).all()
    for _, r in pub.iterrows():
        if r["metric"] == "tokens_per_task":
            assert fmt.kilo(r["value"]) == r["display"]
        elif r["metric"] in ("tgc", "success") and not pd.isna(r["value"]):
            assert r["display"].rstrip("%") == f"{r['value']:.1f}"
    tokens = pub[pub["metric"] == "tokens_per_task"].set_index(["view", "model", "setting"])["value"]
    for _, d in pub[pub["metric"] == "tokens_delta_pct"].iterrows():
        before = tokens[(d["view"], d["model"], "none")]
        after = tokens[(d["view"], d["model"], d["setting"])]
        assert round(100 * (after / before - 1)) == d["value"], d["display"]  # 166K / 110K -> +51%


def test_ibm_view_puts_measured_rows_beside_published(tmp_path):
    (tmp_path / "mine.yaml").write_text("analysis:\n  view: ibm_tau2\n  models:\n    '-': constructed/model-a\n")
    run = tmp_path / "constructed_mixed"
    shutil.copytree(FIXTURES / "constructed_mixed", run)
    records = load_records([run])
    (run / "config.yaml").write_text(yaml.safe_dump({"jobs": {  # core_retrieval ran core only, as IBM's support≥3
        job: {"identity": {"strategy": {"options": {"core_support": 3, "top_k": 0}}}} for job in set(records["job"])}}))
    table = ibm.view("mine", summarize(records, n_boot=200), experiments_dir=tmp_path, records=records)
    retail = table[(table["benchmark"] == "tau2_retail") & (table["split"] == "test")
                   & (table["metric"] == "success")]
    assert list(retail["row"].str.split(" ").str[0]) == ["published", "measured"] * 3
    measured = retail[retail["row"].str.startswith("measured")]
    # none's infra trial (task 9) is a failed trial (tau2-bench leaderboard convention): 4 trials everywhere
    assert measured["row"].iloc[0] == "measured (constructed_mixed, n=4, trials=4)"
    assert measured["value"].iloc[1].startswith("56.2% [")  # support≥3 -> core_retrieval: 4,4,1,0 of 4
    assert measured["value"].iloc[2].startswith("62.5% [")  # full: 4,3,2,1 of 4
    assert (table[table["split"] == "base"]["row"].str.startswith("published")).all()  # we ran no base split


@pytest.mark.parametrize("name", ["ibm_appworld_models", "ibm_ace_vs_evolve", "ibm_tau2"])
def test_experiment_configs_name_a_view_with_published_rows(name):
    block = ibm.experiment_analysis(name)
    assert block["view"] == name
    published_models = set(ibm.load_published().query("view == @name")["model"])
    assert published_models <= set(block["models"])


def test_ibm_tau2_experiment_passes_harness_validation(monkeypatch):
    from harness import run

    monkeypatch.setenv("OPENAI_API_KEY", "not-a-real-key")
    run.register_schemas()
    run.validate([["+experiment=ibm_tau2", "strategy=full", "memory=strategies/samples/tau2_sample.jsonl"]])
    with pytest.raises(SystemExit) as bad:
        run.validate([["+experiment=ibm_tau2", "benchmark.trials=0"]])
    assert bad.value.code == 2


def test_make_tables_on_a_real_oracle_sweep(tmp_path, capsys):
    run = tmp_path / "run"
    shutil.copytree(FIXTURES / "oracle_retail", run)  # output of `make sweep MODEL=oracle LIMIT=4 TRIALS=4`
    assert tables_main([str(run), "--experiment", "ibm_tau2"]) == 0
    out = capsys.readouterr().out
    assert "memdeliv-scripted/oracle  none *    4×4" in out and max(map(len, out.splitlines())) <= 160
    assert "| tau2_retail | test    | memdeliv-scripted/oracle | none *" in (run / "analysis" / "strategies.md").read_text()
    assert "published (IBM blog altk-evolve-bc)" in out
    files = {p.name for p in (run / "analysis").iterdir()}
    for stem in ("strategies", "models", "pairs", "ibm_tau2"):
        assert {f"{stem}.md", f"{stem}.csv"} <= files
    for stem in ("success_vs_tokens", "memory_vs_steps", "strategy_bars"):
        assert {f"{stem}.png", f"{stem}.svg"} <= files
        assert (run / "analysis" / f"{stem}.png").read_bytes()[:4] == b"\x89PNG"
    assert "memory_growth.png" not in files  # the oracle run has no memory history
    csv = pd.read_csv(run / "analysis" / "strategies.csv")
    assert list(csv["success"]) == [1.0, 1.0] and (csv["tasks"] == 4).all()


def test_make_report_is_self_contained(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(FIXTURES / "constructed_mixed", run)
    assert main_in_process("analysis.report", str(run)).returncode == 0
    page = (run / "analysis" / "report.html").read_text()
    assert page.count("data:image/png;base64,") == 4  # with the constructed memory history: growth plot too
    assert "constructed/model-b" in page and "src='http" not in page and 'src="http' not in page


def test_notebook_executes(tmp_path, monkeypatch):
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(ROOT / "analysis" / "notebooks" / "compare.ipynb", as_version=4)
    fixtures = [FIXTURES / "oracle_retail", FIXTURES / "constructed_mixed"]  # not the checkout's runs/
    monkeypatch.setenv("MEMDELIV_RUNS", os.pathsep.join(map(str, fixtures)))
    NotebookClient(nb, timeout=HUNG_S, startup_timeout=HUNG_S, kernel_name="python3",
                   resources={"metadata": {"path": str(ROOT / "analysis" / "notebooks")}}).execute()
    text = "\n".join(str(o.get("data", {}).get("text/plain", "")) + str(o.get("text", ""))
                     for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    assert "constructed/model-a" in text and "oracle_retail" in text
    assert "success_vs_tokens" in text and "published (IBM blog altk-evolve-bc)" in text
    assert not any(o.get("output_type") == "error" for c in nb.cells if c.cell_type == "code" for o in c.outputs)


def test_bad_input_is_a_clear_error(tmp_path, capsys):
    assert tables_main([str(tmp_path / "missing")]) == 2
    assert tables_main([str(FIXTURES / "oracle_retail"), "--experiment", "nope", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "no run directory or results.jsonl at" in err and "no experiment config" in err
