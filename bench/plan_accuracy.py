"""`python bench/plan_accuracy.py RUN_DIR [--pilot-tasks N]`: how close `make plan` comes to what a run recorded.

For every strategy of RUN_DIR (one benchmark, one model) it plans the run's own tasks x trials twice, from a
pilot (the run's records of its first N tasks only) and from the prior (no pilot), and compares the planned
tokens (agent prompt + completion + user simulator) with the recorded ones: ratio = planned / recorded.
docs/cost.md reports the figures. Nothing calls a model.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from analysis import plan, load_records
from analysis.statistics.metrics import INFRA

TOKENS = ("prompt", "completion", "user_prompt", "user_completion")
RECORDED = ("prompt_tokens", "completion_tokens", "user_prompt_tokens", "user_completion_tokens")


def facts_for(records, gold_file: str | None) -> dict:
    gold = json.loads(Path(gold_file).read_text())["gold_actions"] if gold_file else {}
    first = records.iloc[0]
    return {"benchmark": first["benchmark"], "split": first["split"], "max_steps": 200,
            "model": {"name": "openai/gpt-4.1"},  # priced as gpt-4.1 would be; tokens are what is compared
            "tasks": sorted({str(t) for t in records["task_id"]}, key=lambda t: (len(t), t)),
            "gold_actions": gold, "memory": first["memory"], "needs_judge": False, "strategy_options": {}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run")
    parser.add_argument("--pilot-tasks", type=int, default=10)
    parser.add_argument("--facts", help="a harness.plan_facts file with these tasks' gold-action counts")
    args = parser.parse_args()
    records = load_records([args.run])
    records = records[records["error"] != INFRA]
    facts = facts_for(records, args.facts)
    trials = int(records["trial"].max()) + 1
    pilot_ids = set(facts["tasks"][:args.pilot_tasks])
    pilot = records[records["task_id"].astype(str).isin(pilot_ids)]
    strategies = list(dict.fromkeys(records["strategy"]))
    from_pilot, _ = plan.plan(facts, strategies, trials, pilot=pilot)
    from_prior, _ = plan.plan(facts, strategies, trials)
    print(f"{args.run}: {len(facts['tasks'])} tasks x {trials} trials; pilot = the first {len(pilot_ids)} tasks")
    print(f"{'strategy':16} {'recorded':>10} {'pilot':>10} {'ratio':>6} {'prior':>10} {'ratio':>6}")
    for p_cell, q_cell in zip(from_pilot, from_prior):
        mine = records[records["strategy"] == p_cell.strategy]
        recorded = float(sum(mine[c].fillna(0).sum() for c in RECORDED))
        n = len(mine)  # compare per recorded episode (a failed record is still an episode)
        est_p = n * sum(p_cell.episode.tokens[k] for k in TOKENS)
        est_q = n * sum(q_cell.episode.tokens[k] for k in TOKENS)
        print(f"{p_cell.strategy:16} {recorded:>10.0f} {est_p:>10.0f} {est_p / recorded:>6.2f} {est_q:>10.0f} "
              f"{est_q / recorded:>6.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
