"""The episode viewer without a browser (analysis/viewer/): filters, counts and pages over a constructed run,
step alignment of two episodes, the memory shown per step, and that no path leaves the run directories."""

from __future__ import annotations

import http.client
import json
import re
import threading
from pathlib import Path

import pytest
from werkzeug.serving import make_server

from analysis.report import linked_table, viewer_link
from analysis.viewer import compare, memory, trajectory
from analysis.viewer.__main__ import main as viewer_main
from analysis.viewer.app import create_app
from analysis.viewer.episodes import BadQuery, EpisodeIndex

STRATEGIES = ("none", "full", "core_retrieval")
TASKS = 40
SECRET = "not-for-the-browser"


def tool_call(name: str, **arguments) -> dict:
    return {"id": f"call_{name}", "name": name, "arguments": arguments, "requestor": "assistant"}


def tau2_trajectory(actions: list[dict | str], reward: float) -> dict:
    """A tau2-bench results file of one simulation: the canned greeting, a user turn, then one assistant turn per
    action (a tool call dict, or text), each followed by its tool result."""
    messages = [{"role": "assistant", "content": "Hi! How can I help you today?", "usage": None, "raw_data": None},
                {"role": "user", "content": "I want to return my lamp."}]
    for act in actions:
        usage = {"prompt_tokens": 10, "completion_tokens": 2}
        if isinstance(act, str):
            messages.append({"role": "assistant", "content": act, "tool_calls": None, "usage": usage})
        else:
            messages.append({"role": "assistant", "content": None, "tool_calls": [act], "usage": usage})
            messages.append({"role": "tool", "id": act["id"], "content": "{\"ok\": true}"})
    return {"info": {"environment_info": {"policy": "# Retail agent policy"}}, "tasks": [{"id": "t"}],
            "simulations": [{"task_id": "t", "termination_reason": "user_stop", "messages": messages,
                             "reward_info": {"reward": reward, "reward_breakdown": {"DB": reward, "COMMUNICATE": 1.0},
                                             "db_check": {"db_match": bool(reward), "db_reward": reward}}}]}


def step_usage(delivered: list[list[str]], dropped: list[list[str]] | None = None) -> list[dict]:
    dropped = dropped or [[] for _ in delivered]
    return [{"index": i, "prompt_tokens": 100 + i, "completion_tokens": 5, "memory_tokens": 7 * len(ids),
             "cost_usd": None, "delivered_ids": ids, "dropped_ids": gone, "context_dropped_ids": [], "phase": "act"}
            for i, (ids, gone) in enumerate(zip(delivered, dropped))]


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    """A constructed run: 3 strategies x 40 tasks x 1 trial; success where task % 3 != strategy's index; one
    error label; tokens grow with the task number. Task 0 has trajectories for none and full."""
    root = tmp_path_factory.mktemp("viewer")
    run_dir = root / "constructed"
    (run_dir / "trajectories").mkdir(parents=True)
    (root / "secret.txt").write_text(SECRET)
    mem = run_dir / "memory.jsonl"
    mem.write_text(json.dumps({"_meta": {"kind": "sample"}}) + "\n" + "\n".join(
        json.dumps({"id": f"g{i}", "text": f"guideline text {i}", "category": "strategy"}) for i in range(4)) + "\n")
    lines = []
    for s, strategy in enumerate(STRATEGIES):
        for t in range(TASKS):
            rec = {"schema": 1, "run": "constructed", "job": f"tau2_retail/test/m/{strategy}",
                   "benchmark": "tau2_retail", "split": "test", "model": "m", "strategy": strategy,
                   "placement": "after_policy",
                   "memory": str(mem), "trial": 0, "task_id": str(t), "success": t % 3 != s, "reward": 1.0,
                   "error": "agent" if (strategy == "full" and t == 1) else None, "steps": 3,
                   "prompt_tokens": 1000 * (t + 1), "completion_tokens": 10, "memory_tokens": 0 if s == 0 else 50,
                   "cost_usd": 0.01 * t}
            if t == 0 and strategy in ("none", "full"):
                rec["trajectory"] = f"trajectories/{strategy}.json"
                rec["step_usage"] = step_usage([[]] * 3 if strategy == "none" else [["g0", "g1"], ["g0"], ["g2"]],
                                               None if strategy == "none" else [["g3"], [], []])
            lines.append(json.dumps(rec))
    (run_dir / "results.jsonl").write_text("\n".join(lines) + "\n")
    lookup = tool_call("find_user", first_name="Mei")
    trajectory_files = {
        "none": [lookup, tool_call("get_order", id="#1"), "Done. [simulated: p=0.5 u=0.7 outcome=failure]"],
        "full": [lookup, tool_call("return_items", id="#1"), "Done. [simulated: p=0.6 u=0.2 outcome=success]"]}
    for strategy, actions in trajectory_files.items():
        (run_dir / "trajectories" / f"{strategy}.json").write_text(
            json.dumps(tau2_trajectory(actions, 1.0 if strategy == "full" else 0.0)))
    return run_dir


@pytest.fixture(scope="module")
def index(run) -> EpisodeIndex:
    return EpisodeIndex([run])


def q(**params) -> dict[str, list[str]]:
    return {k: v if isinstance(v, list) else [str(v)] for k, v in params.items()}


def test_filters_count_what_they_keep(index):
    assert index.page(q()).matched == 3 * TASKS
    full = index.page(q(strategy="full"))
    assert full.matched == TASKS and {r["strategy"] for r in full.rows} == {"full"}
    # full succeeds where task % 3 != 1
    assert full.successes == sum(t % 3 != 1 for t in range(TASKS))
    assert index.page(q(strategy=["none", "full"])).matched == 2 * TASKS
    assert index.page(q(strategy="full", success="false")).matched == sum(t % 3 == 1 for t in range(TASKS))
    assert index.page(q(error="agent")).matched == 1
    assert index.page(q(error="none")).matched == 3 * TASKS - 1
    assert index.page(q(task="7")).matched == 3
    assert index.page(q(tokens_min=30_000, strategy="none")).matched == sum(1000 * (t + 1) + 10 >= 30_000
                                                                           for t in range(TASKS))
    assert index.page(q(cost_max=0.05)).matched == 3 * 6  # tasks 0..5
    facets = dict(index.page(q(strategy="full")).facets["strategy"])
    assert facets == {"none": 0, "full": TASKS, "core_retrieval": 0}


def test_bad_filters_are_refused_with_a_reason(index):
    with pytest.raises(BadQuery, match="unknown filter"):
        index.page(q(colour="red"))
    with pytest.raises(BadQuery, match="not a number"):
        index.page(q(tokens_min="lots"))
    with pytest.raises(BadQuery, match="cannot sort"):
        index.page(q(sort="secret"))


def test_pages_and_sorting_are_server_side(index):
    first = index.page(q(per_page=50))
    assert (first.pages, len(first.rows)) == (3, 50)
    last = index.page(q(per_page=50, page=3))
    assert len(last.rows) == 3 * TASKS - 100
    assert index.page(q(per_page=50, page=99)).page == 3  # clamped, not empty
    top = index.page(q(sort="tokens", desc=1, per_page=3)).rows
    assert [r["task_id"] for r in top] == [str(TASKS - 1)] * 3
    by_task = index.page(q(sort="task_id", strategy="none", per_page=12)).rows
    assert [r["task_id"] for r in by_task] == [str(t) for t in range(12)]  # '9' before '10'


def test_conversation_steps_skip_the_greeting_and_match_the_ledger(run, index):
    full = index.record(int(index.page(q(strategy="full", task=0)).rows[0]["id"]))
    conv = trajectory.load(run, full["trajectory"])
    assert sorted(conv.step_turns) == [0, 1, 2]
    assert conv.step_turns[1].tool_calls[0]["name"] == "return_items"
    steps = memory.acting(memory.steps(full))
    assert [s.delivered for s in steps] == [["g0", "g1"], ["g0"], ["g2"]] and steps[0].dropped == ["g3"]
    assert trajectory.simulated_draws(conv) == [{"p": "0.6", "u": "0.2", "outcome": "success"}]


def test_alignment_finds_the_first_divergence_and_memory_differences(run, index):
    ids = {s: int(index.page(q(strategy=s, task=0)).rows[0]["id"]) for s in ("none", "full")}
    a, b = (index.record(ids[s]) for s in ("none", "full"))
    ta, tb = (trajectory.load(run, r["trajectory"]).step_turns for r in (a, b))
    sa, sb = (memory.acting(memory.steps(r)) for r in (a, b))
    rows = compare.align(ta, tb, sa, sb)
    # step 0 is the same lookup; step 1 differs (get_order vs return_items); the final texts differ only by the tag
    assert [r.same for r in rows] == [True, False, True]
    assert compare.first_divergence(rows) == 1
    assert rows[0].only_b == ["g0", "g1"] and rows[0].only_a == []
    assert compare.delivered_difference(sa, sb) == ([], ["g0", "g1", "g2"])
    shorter = compare.align(ta, {0: tb[0]}, sa, sb[:1])
    assert compare.first_divergence(shorter) == 1 and shorter[1].b is None  # B ended: that is a divergence


def test_pages_render_the_memory_the_ledger_names(run, index):
    client = create_app([run], index).test_client()
    eid = int(index.page(q(strategy="full", task=0)).rows[0]["id"])
    page = client.get(f"/episode/{eid}").get_data(as_text=True)
    assert "guideline text 1" in page and "g3" in page and "planted p = <b>0.6</b>" in page
    other = int(index.page(q(strategy="none", task=0)).rows[0]["id"])
    cmp = client.get(f"/compare?a={other}&b={eid}").get_data(as_text=True)
    assert "First divergence: <a href=\"#divergence\"><b>step 2</b>" in cmp
    listing = client.get("/?strategy=core_retrieval").get_data(as_text=True)
    assert f'id="count">{TASKS}<' in listing
    assert client.get("/?nonsense=1").status_code == 400
    assert client.get("/episode/100000").status_code == 404


def test_memory_text_is_read_only_from_allowed_places(run, tmp_path):
    outside = tmp_path / "elsewhere" / "memory.jsonl"
    outside.parent.mkdir()
    outside.write_text(json.dumps({"id": "g0", "text": "x"}) + "\n")
    assert memory.readable_memory(str(outside), (run,)) is None
    assert memory.readable_memory(str(run / "memory.jsonl"), (run,)) == (run / "memory.jsonl").resolve()
    assert memory.readable_memory(str(run / "results.jsonl").replace(".jsonl", ".json"), (run,)) is None


@pytest.fixture(scope="module")
def server(run, index):
    srv = make_server("127.0.0.1", 0, create_app([run], index), threaded=True)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv.port
    srv.shutdown()


@pytest.mark.parametrize("path", ["/runs/0/../secret.txt", "/runs/0/..%2fsecret.txt", "/runs/0/%2e%2e/secret.txt",
                                  "/runs/0/%2E%2E%2Fsecret.txt", "/runs/0/trajectories/../../secret.txt",
                                  "/runs/0/%2Fetc%2Fpasswd", "/runs/0//etc/passwd"])
def test_no_path_leaves_the_run_directories(server, path):
    conn = http.client.HTTPConnection("127.0.0.1", server, timeout=10)
    conn.request("GET", path)  # sent as written: no client-side normalisation of `..`
    reply = conn.getresponse()
    body = reply.read().decode("utf-8", "replace")
    assert reply.status in (403, 404) and SECRET not in body and "root:" not in body


def test_run_files_inside_are_served(server):
    conn = http.client.HTTPConnection("127.0.0.1", server, timeout=10)
    conn.request("GET", "/runs/0/trajectories/full.json")
    reply = conn.getresponse()
    assert reply.status == 200 and json.loads(reply.read())["simulations"][0]["task_id"] == "t"


def test_cli_refuses_a_missing_run(tmp_path, capsys):
    assert viewer_main([str(tmp_path / "nope")]) == 2
    assert "no run directory" in capsys.readouterr().err


def test_report_rows_link_to_their_cell(index):
    summary = index.records.groupby(["benchmark", "split", "model", "assembly", "strategy"], sort=False).size() \
        .reset_index(name="n")
    link = viewer_link(summary.iloc[1], "http://127.0.0.1:9/")
    assert link == "http://127.0.0.1:9/?benchmark=tau2_retail&split=test&model=m&strategy=full"
    html = linked_table(summary[["strategy", "n"]], summary, "http://v/")
    assert html.count("href='http://v/?") == 2 * len(summary) and "strategy=core_retrieval'>core_retrieval<" in html


def test_an_episode_without_an_error_label_shows_a_dash_never_nan(tmp_path):
    """A run where no record has an error: pandas reads the column as float NaN; the list shows `-`."""
    run_dir = tmp_path / "clean"
    run_dir.mkdir()
    rows = [{"schema": 1, "job": "tau2_retail/test/m/none", "benchmark": "tau2_retail", "split": "test", "model": "m",
             "strategy": "none", "trial": 0, "task_id": str(t), "success": bool(t % 2), "error": None, "steps": 2,
             "prompt_tokens": 100, "completion_tokens": 5, "memory_tokens": 0} for t in range(3)]
    (run_dir / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    index = EpisodeIndex([run_dir])
    assert index.page(q(error="none")).matched == 3
    listing = create_app([run_dir], index).test_client().get("/").get_data(as_text=True)
    body = listing.split("<tbody>")[1].split("</tbody>")[0]
    cells = [re.findall(r"<td[^>]*>(.*?)</td>", row, re.S) for row in body.split("<tr>")[1:]]
    assert [c[8] for c in cells] == ["-"] * 3 and "nan" not in listing  # column 8: error


def test_the_simulated_line_and_step_one_show_one_memory_figure(artifact, tmp_path):
    """The world's reading (the draw's memory tokens) and the ledger's step 1 figure: one count, one definition
    (gpt-4o tokens of the block's bullet lines); the whole block in another tokenizer would differ."""
    from conftest import read_records, run_in_process

    from harness.ledger import MemoryTokenCounter
    from harness.scripted import simulated_world as world

    done = run_in_process("model=simulated", f"model.world={artifact}", "strategy=full", "benchmark=tau2_retail",
                          "benchmark.task_ids=['5']", "benchmark.trials=1", f"memory={artifact}", "run_name=sim",
                          runs_dir=tmp_path, multirun=True)
    assert done.returncode == 0, done.stderr[-2000:]
    run_dir = tmp_path / "sim"
    page = create_app([run_dir], EpisodeIndex([run_dir])).test_client().get("/episode/0").get_data(as_text=True)
    drawn = re.search(r"memory tokens: ([\d,]+)", page).group(1)
    step_one = re.search(r"memory ([\d,]+) tok", page).group(1)
    [record] = read_records(run_dir)
    assert drawn == step_one == f"{record['step_usage'][0]['memory_tokens']:,}"
    block = "\n".join(["<learned_guidelines>", "Learned guidelines from earlier tasks:",
                       *(f"- [{g}] {t}" for g, t in world.load_world(artifact).texts.items()), "</learned_guidelines>"])
    assert MemoryTokenCounter("memdeliv-simulated/strong")(block) == world.block_tokens(block) > 1000
    assert MemoryTokenCounter("gpt-4o")(block) != world.block_tokens(block)  # the header lines count there
