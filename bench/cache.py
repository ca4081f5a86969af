"""Prompt-cache reuse per memory placement x strategy on the managed local server, side by side.

A few τ² retail tasks with the sample memory, model=local (SmolLM2-135M on llama-cpp-python), run as one job
per placement x strategy, each on a fresh server that then serves its tasks one after the other, as a sweep's
server does: memory after the policy in the system prompt and memory at the head of the first user message
(the two stable layouts), and memory after the conversation (`benchmark.placement=end_of_conversation`, the
cache-hostile layout).

llama-cpp-python's server does not put cached tokens in its usage block (records hold null), so the hit
fraction is measured from its verbose log instead: per request, the server logs how many prompt tokens it
reused from its KV state / RAM prompt cache ("N prefix-match hit, remaining M prompt tokens to eval"; no
such line = nothing reused). hit fraction = reused / prompt tokens, over the agent's calls of the task
(user-simulator calls shown apart). Target for the stable layouts: >= 0.95 over all agent calls, the
fresh server's cold first call included. Printed beside it: the cold call's share of the prompt tokens, and
the hit without it (what every later call reuses).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from harness.run import compose_job  # noqa: E402
from harness.row import RESULTS, read_rows  # noqa: E402
from harness.runner import resolve, run_job  # noqa: E402  (the Job the CLI builds, and its loop)

LAYOUTS = ("after_policy", "first_user_message", "end_of_conversation")
STABLE = ("after_policy", "first_user_message")
TARGET = 0.95
_PREFIX_HIT = re.compile(r"Llama\.generate: (\d+) prefix-match hit, remaining (\d+) prompt tokens to eval")
_EVALUATED = re.compile(r"prompt eval time =\s*[\d.]+ ms /\s*(\d+) tokens")
_FULL_HIT = "Llama.generate: full prompt already cached"
_REQUEST_END = re.compile(r'"POST /v1/chat/completions HTTP/1\.1" (\d+)')


@dataclass
class Request:
    reused: int  # prompt tokens the server took from its KV state / RAM cache instead of evaluating
    prompt: int  # prompt tokens of the request


def parse_server_log(text: str) -> list[Request]:
    """One entry per answered chat request, in order, from llama-cpp-python's verbose log.

    A request with a reused prefix logs "N prefix-match hit, remaining M prompt tokens to eval" (prompt
    = N + M); one without logs only llama.cpp's "prompt eval time = ... / E tokens" (prompt = E).
    """
    out, hit, evaluated = [], None, None
    for line in text.splitlines():
        if m := _PREFIX_HIT.search(line):
            hit = (int(m.group(1)), int(m.group(1)) + int(m.group(2)))
        elif _FULL_HIT in line:
            hit = (-1, -1)  # whole prompt reused: size taken from the eval line below (0 evaluated) - rare
        elif m := _EVALUATED.search(line):
            evaluated = int(m.group(1))
        elif m := _REQUEST_END.search(line):
            if m.group(1) == "200":
                if hit and hit[0] >= 0:
                    out.append(Request(*hit))
                elif evaluated is not None:
                    out.append(Request(0, evaluated))
            hit = evaluated = None
    return out


def hit_fraction(records: list[dict], requests: list[Request]) -> dict[str, tuple[int, int]]:
    """(reused, prompt) summed over the agent's calls, over them without the run's first (cold) call, and
    over the user simulator's calls; `records` in the order the tasks ran.

    The log does not say who called; the records do (each agent step's prompt size, in order), so a
    request whose size is the next agent step's is the agent's, any other is the user simulator's.
    """
    agent_sizes = [s["prompt_tokens"] for r in records for s in r["step_usage"]]
    sums = {"agent": [0, 0], "warm": [0, 0], "user": [0, 0]}
    first = True
    for req in requests:
        role = "agent" if agent_sizes and req.prompt == agent_sizes[0] else "user"
        if role == "agent":
            agent_sizes.pop(0)
            if not first:
                sums["warm"][0] += req.reused
                sums["warm"][1] += req.prompt
            first = False
        sums[role][0] += req.reused
        sums[role][1] += req.prompt
    return {k: (v[0], v[1]) for k, v in sums.items()}


def _fraction(pair: tuple[int, int]) -> str:
    return "n/a" if not pair[1] else f"{pair[0] / pair[1]:.3f}"


def run_layout(runs: Path, layout: str, tasks: list[str], max_tokens: int, max_steps: int,
               strategy: str = "full") -> tuple[list[dict], list[Request]]:
    name = f"{layout}-{strategy}"
    ids = ",".join(f"'{t}'" for t in tasks)
    cfg = compose_job([
        "model=local", f"strategy={strategy}", f"memory={REPO / 'strategies/samples/tau2_sample.jsonl'}",
        f"benchmark.task_ids=[{ids}]", f"benchmark.placement={layout}", f"runs_dir={runs}",
        f"run_name={name}", "progress=false", "concurrency=1", f"model.kwargs.max_tokens={max_tokens}",
        f"benchmark.max_steps={max_steps}"])
    run_job(resolve(cfg))
    records = [row.columns() for _, row in read_rows(runs / name / RESULTS)]  # the harness's one reader
    return records, parse_server_log((runs / name / "local_server.log").read_text(errors="replace"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", default="5,9,12", help="retail test task ids, run in this order on one server "
                        "(default: 5,9,12, the split's first three)")
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--max-steps", type=int, default=40, help="tau2 step cap (agent + user turns)")
    parser.add_argument("--strategies", default="full,ace", help="comma list (default: full,ace)")
    parser.add_argument("--placements", default=",".join(LAYOUTS), help="comma list (default: all three)")
    args = parser.parse_args()
    tasks = args.tasks.split(",")
    runs = Path(tempfile.mkdtemp(prefix="memdeliv-cache-"))
    rows = []
    for strategy in args.strategies.split(","):
        for layout in args.placements.split(","):
            records, requests = run_layout(runs, layout, tasks, args.max_tokens, args.max_steps, strategy)
            rows.append((layout, strategy, records, hit_fraction(records, requests)))
    print(f"\nprompt-cache hit fraction, retail tasks {args.tasks} on one server per row, model=local, "
          f"max_steps {args.max_steps}\n(measured from the server's prefix-reuse log; runs in {runs})")
    print(f"{'placement':<22}{'strategy':<10}{'agent calls':>12}{'agent hit':>11}{'reused/prompt':>18}"
          f"{'cold share':>12}{'warm hit':>10}{'user hit':>10}  ended")
    met = True
    for layout, strategy, records, frac in rows:
        a, w, u = frac["agent"], frac["warm"], frac["user"]
        cold = (a[1] - w[1]) / a[1] if a[1] else 0.0
        ended = ", ".join(sorted({r["termination"] + (f"/{r['error']}" if r["error"] else "") for r in records}))
        print(f"{layout:<22}{strategy:<10}{sum(r['steps'] for r in records):>12}{_fraction(a):>11}"
              f"{f'{a[0]}/{a[1]}':>18}{cold:>12.3f}{_fraction(w):>10}{_fraction(u):>10}  {ended}")
        if layout in STABLE:
            met = met and bool(a[1]) and a[0] / a[1] >= TARGET
    print(f"target: stable layouts ({', '.join(STABLE)}) >= {TARGET} over all agent calls -> "
          f"{'met' if met else 'NOT met'}")


if __name__ == "__main__":
    main()
