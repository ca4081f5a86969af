"""The "infra rates differ" rule is defined once (harness/infra_rates.py): the runner's end-of-job line and analysis's
warnings name the same cells, strategies and counts on the same rows. Hand-built rows; every count is worked out."""

from __future__ import annotations

import json
import re
from pathlib import Path

from analysis import load_records, summarize
from analysis.statistics import infra
from analysis.statistics.metrics import infra_imbalance
from harness.infra_rates import differ_text, rates_differ
from harness.runner.infra_balance import infra_warning
from harness.store import RunStore

SAID = re.compile(r"^(?:memdeliv: warning: )?(.*?): [Ii]nfra errors differ between strategies(?: so far)? "
                  r"\((.*)\): a strategy may cause them")


def row(model: str, strategy: str, task: int, trial: int, error: str | None = None, variant: str | None = None,
        placement: str = "after_policy", attempt: int | None = None) -> dict:
    name = f"{strategy}({variant})" if variant else strategy
    suffix = "" if placement == "after_policy" else f"@placement={placement}"
    return {"run": "r", "job": f"tau2_retail/test/{model}/{name}{suffix}", "benchmark": "tau2_retail",
            "split": "test", "model": model, "strategy": strategy,
            **({"strategy_variant": variant} if variant else {}), "placement": placement, "context_policy": "fail",
            "answer_mode": "plain", "task_id": str(task), "trial": trial, "success": error is None,
            "reward": float(error is None), "error": error, **({"attempt": attempt} if attempt else {})}


def sweep() -> list[dict]:
    rows = []
    for t in range(4):
        for k in range(2):
            rows += [row("m1", "none", t, k), row("m1", "core_retrieval", t, k, "infra" if (t, k) == (0, 0) else None,
                                                    variant="top_k=3"),
                     row("m1", "full", t, k, "infra" if t == 1 else None),  # tasks 1: 2 infra of 8 ...
                     row("m2", "none", t, k, "infra" if (t, k) == (3, 1) else None),  # m2: 1 of 8 each, equal
                     row("m2", "full", t, k, "infra" if (t, k) == (2, 0) else None),
                     row("m1", "none", t, k, placement="first_user_message"),
                     row("m1", "full", t, k, "infra" if (t, k) == (0, 1) else None, placement="first_user_message")]
    return rows + [row("m1", "full", 1, 0, attempt=2)]  # ... of which one was run again on resume and passed: 1 of 8


def said(lines) -> set[tuple[str, str]]:
    return {SAID.match(line).groups() for line in lines}


def test_the_runner_and_the_tables_say_the_same_on_the_same_rows(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    rows = sweep()
    (run / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    stored = RunStore(run).read()
    runner = {line for job in {r["job"] for r in rows} if (line := infra_warning(stored, job))}
    records = load_records([run])
    tables = infra_imbalance(summarize(records, n_boot=20))
    expected = {("tau2_retail/test/m1/placement=after_policy",
                 "none 0/8, core_retrieval (top_k=3) 1/8, full 1/8"),
                ("tau2_retail/test/m1/placement=first_user_message", "none 0/8, full 1/8")}  # m2: 1/8 and 1/8
    assert said(runner) == said(tables) == said(infra.differ_lines(records)) == expected


def test_any_difference_counts_and_equal_rates_do_not():
    assert rates_differ({"none": (0, 40), "full": (1, 40)})
    assert not rates_differ({"none": (1, 3), "full": (2, 6)})  # the same rate on other totals
    assert not rates_differ({"full": (3, 40)}) and not rates_differ({})  # nothing to compare against
    assert differ_text({"none": (0, 2), "full": (1, 2)}, so_far=True) == \
        "infra errors differ between strategies so far (none 0/2, full 1/2): a strategy may cause them"
    assert differ_text({"none": (1, 2), "full": (1, 2)}) == ""


def test_a_job_alone_in_its_cell_has_nothing_to_compare(tmp_path: Path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "results.jsonl").write_text("".join(json.dumps(row("m1", "full", t, 0, "infra")) + "\n" for t in range(2)))
    assert infra_warning(RunStore(run).read(), "tau2_retail/test/m1/full") is None
    assert infra_warning(RunStore(run).read(), "tau2_retail/test/m1/none") is None  # no rows of its own yet
