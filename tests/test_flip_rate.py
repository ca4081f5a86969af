"""The task flip rate (analysis/noise_floor.py): the share of tasks whose verdict differs between the two halves,
the figure tau2-bench's users report (issue 540), on seeded truth p = 0.5 and on deterministic halves, through the
function and through the CLI's printed line."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis import noise_floor


def rec(strategy: str, task: int, trial: int, success: bool) -> dict:
    return {"run": "r", "job": f"tau2_retail/test/m/{strategy}", "benchmark": "tau2_retail", "split": "test",
            "model": "m", "strategy": strategy, "task_id": str(task), "trial": trial, "success": bool(success),
            "reward": float(success), "error": None, "seed": 100 + trial, "prompt_tokens": 10, "completion_tokens": 1}


def write_run(path: Path, rows: list[dict]) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def printed_rates(capsys: pytest.CaptureFixture[str], run: Path) -> list[float]:
    assert noise_floor.main([str(run)]) == 0
    out = capsys.readouterr().out
    return [float(v) / 100 for v in re.findall(r"task flip rate: ([\d.]+)% of", out)]


def test_p_half_at_one_plus_one_trials_flips_about_half_the_tasks(tmp_path, capsys):
    """400 tasks, 2 trials each, success ~ Bernoulli(0.5): chance flip rate 2p(1-p) = 0.5."""
    x = np.random.default_rng(7).random((400, 2)) < 0.5
    rate = noise_floor.flip_rate(x[:, :1], x[:, 1:])
    assert abs(rate - 0.5) <= 0.1
    rows = [rec("none", t, k, x[t, k]) for t in range(400) for k in range(2)]
    assert noise_floor.aa_spread(pd.DataFrame(rows))["aa_flip_rate"] == pytest.approx(rate)
    run = write_run(tmp_path / "p5", rows)
    assert printed_rates(capsys, run) == [pytest.approx(rate, abs=0.0005)]


@pytest.mark.parametrize(("opposite", "expected"), [(False, 0.0), (True, 1.0)])
def test_identical_halves_never_flip_and_opposite_halves_always_do(tmp_path, capsys, opposite, expected):
    first = np.arange(50) % 3 == 0
    second = ~first if opposite else first
    assert noise_floor.flip_rate(first, second) == expected
    assert noise_floor.flip_rate(np.c_[first, first], np.c_[second, second]) == expected  # mean >= 0.5 per half
    within = [rec("none", t, k, (first, second)[k][t]) for t in range(50) for k in range(2)]
    assert printed_rates(capsys, write_run(tmp_path / "halves", within)) == [expected]
    seeds = [rec(f"none (aa_seed={s})", t, 0, half[t]) for s, half in ((300, first), (1300, second)) for t in range(50)]
    # each seed's copy has one trial (no own halves); the pair of seeds is the A/A experiment's two halves
    assert printed_rates(capsys, write_run(tmp_path / "seeds", seeds)) == [expected]
