"""ACE as its reference runs it (issue 17 §5): ground truth and 3 rounds by default, labelled artifacts, the
Curator's information, no paper-mode caps, role-call retries, lost updates counted, cited bullet ids.
SCRIPTED roles only (tests/ace_fakes.py, harness/scripted/ace_roles.py); no language model runs here."""

from __future__ import annotations

import json
from pathlib import Path

import litellm
import pytest

from ace_fakes import MODEL, install_scripted_roles
from analysis.tables import analyse
from analysis.views.displays import strategies_display
from conftest import read_records, unwrapped
from harness.memory import ace_adapt
from strategies.ace.adapt import AceSettings, Adapter
from strategies.ace.deltas import apply_operations
from strategies.ace.llm import JsonLLM, RoleError
from strategies.ace.playbook import load_playbook, Playbook
from strategies.ace.roles import cited_ids, cited_steps
from strategies import TaskView, Trajectory
from memory_kit.budget import token_counter

ADAPT = ["model=oracle", "benchmark=tau2_retail", "progress=false", "--train", "2", "--val", "1"]


def test_keyless_adaptation_defaults_to_ground_truth_and_labels_the_playbook(tmp_path, capsys):
    out = tmp_path / "pb.jsonl"
    code = ace_adapt.main([*ADAPT, "--runs-dir", str(tmp_path), "--run", "gt", "--out", str(out),
                           "--reflector-model", "SCRIPTED"])
    assert code == 0, capsys.readouterr().err
    playbook, meta = load_playbook(out)
    assert len(playbook) >= 1 and "SCRIPTED" in meta["note"]  # a keyless run yields a playbook, labelled as fake
    assert (meta["ground_truth"], meta["rounds"], meta["split"]) == (True, 3, "train")
    history = [json.loads(line) for line in out.with_name("pb.history.jsonl").read_text().splitlines()]
    assert all(h["ground_truth_shown"] for h in history if h["event"] == "update")  # gold solution reached it
    val = read_records(tmp_path / "gt" / "epoch1_val")
    assert val[0]["strategy"] == "ace" and val[0]["memory_ground_truth"] is True  # the flag reaches the records
    assert "ground truth from train; updates lost 0" in capsys.readouterr().out


def test_label_free_variant_is_one_option_away(tmp_path):
    out = tmp_path / "pb.jsonl"
    assert ace_adapt.main([*ADAPT, "--runs-dir", str(tmp_path), "--run", "nogt", "--out", str(out),
                           "--reflector-model", "SCRIPTED", "--no-ground-truth"]) == 0
    _, meta = load_playbook(out)
    assert meta["ground_truth"] is False
    assert read_records(tmp_path / "nogt" / "epoch1_val")[0]["memory_ground_truth"] is False
    shown = strategies_display(analyse([str(tmp_path / "nogt" / "epoch1_val")], n_boot=50).summary)
    assert list(shown["strategy"].str.rstrip(" *")) == ["ace (no GT)"]  # tables name the label-free variant


def test_ground_truth_is_refused_off_the_train_split(tmp_path, capsys):
    assert ace_adapt.main(["model=oracle", "benchmark=tau2_retail", "benchmark.split=test", "--runs-dir",
                           str(tmp_path)]) == 2
    assert "train split only" in capsys.readouterr().err


def test_a_run_whose_every_update_was_lost_is_an_error(tmp_path, capsys):
    roles = install_scripted_roles()
    for _ in range(2):  # both training episodes: the Reflector answers something that is not JSON
        roles.queue("reflector", "I cannot answer in JSON today")
    code = ace_adapt.main([*ADAPT, "--runs-dir", str(tmp_path), "--run", "lost", "--reflector-model", MODEL,
                           "--curator-model", MODEL])
    assert code == 1
    err = capsys.readouterr().err
    assert "all 2 update(s) lost" in err and "answer is not JSON" in err  # the first failure is printed
    rows = read_records(tmp_path / "lost" / "epoch1_train")
    assert [r["update_lost"] for r in rows] == [True, True]
    manifest = json.loads((tmp_path / "lost" / "epoch1_train" / "manifest.json").read_text())
    assert [job["updates_lost"] for job in manifest["jobs"].values()] == [2]
    shown = strategies_display(analyse([str(tmp_path / "lost" / "epoch1_train")], n_boot=50).summary)
    assert list(shown["updates lost"]) == ["2"] and list(shown["cited steps"]) == ["0"]


def _rate_limited(times: int):
    calls = []

    def completion(**kwargs):
        calls.append(kwargs)
        if len(calls) <= times:
            raise litellm.exceptions.RateLimitError(message="slow down", llm_provider="openai", model="m")
        return {"choices": [{"message": {"content": '{"operations": []}'}}]}

    return completion, calls


def test_role_calls_retry_transient_errors_as_agent_calls_do():
    completion, calls = _rate_limited(2)
    llm = JsonLLM("m", completion=completion, retry_backoff_s=0)
    answer, usage = llm.ask("s", "u", {"type": "object"}, "curator")
    assert answer == {"operations": []} and usage["retries"] == 2 and len(calls) == 3
    assert calls[0]["max_retries"] == 0  # the SDK must not retry unseen
    completion, calls = _rate_limited(5)
    with pytest.raises(RoleError, match="after 2 attempts: RateLimitError"):
        JsonLLM("m", completion=completion, max_retries=1, retry_backoff_s=0).ask("s", "u", {"type": "object"}, "x")
    with pytest.raises(RoleError):  # not transient: no retry
        JsonLLM("m", completion=lambda **kw: calls.append(1) or 1 / 0, retry_backoff_s=0).ask("s", "u", {}, "x")
    assert len(calls) == 3


def test_paper_mode_has_no_per_update_or_per_bullet_cap():
    paper, extended = AceSettings(), AceSettings(mode="extended")
    assert (paper.operation_limit, paper.content_limit) == (None, None)
    assert (extended.operation_limit, extended.content_limit) == (10, 600)
    ops = [{"type": "ADD", "section": "others", "content": f"lesson {i} " + "x" * 700} for i in range(12)]
    assert len(apply_operations(Playbook(), ops, paper.content_limit, paper.operation_limit).added) == 12
    capped = apply_operations(Playbook(), ops, extended.content_limit, extended.operation_limit)
    assert not capped.added and len(capped.rejected) == 12


def test_curator_is_told_the_budget_and_the_progress():
    roles = install_scripted_roles()
    episode = Trajectory(task=TaskView("tau2_retail", "7", "return an item"),
                         messages=({"role": "assistant", "content": "done"},), reward=1.0, success=True)
    Adapter(reflector=JsonLLM(MODEL), curator=JsonLLM(MODEL), count_tokens=token_counter("gpt-4o")).step(
        Playbook(), episode, progress=(2, 5))
    user = roles.calls[-1]["messages"][1]["content"]
    assert roles.calls[-1]["role"] == "curator"
    assert "sample 2 of 5" in user and "within 80000 tokens" in user
    assert "full conversation" not in user  # ace-agent/ace's Curator sees the question, not the conversation


def test_cited_bullet_ids_are_read_from_the_structured_field():
    pb, first = Playbook().add("strategies", "Authenticate first.")
    pb, second = pb.add("others", "Be brief.")
    episode = Trajectory(task=TaskView("tau2_retail", "1", "t"), messages=(
        {"role": "assistant", "content": f'I will look it up.\nbullet_ids: ["{second.id}", "str-99999"]'},
        {"role": "user", "content": f"[{first.id}]"},  # the user's turns never count
        {"role": "assistant", "content": "Done."},
        {"role": "assistant", "content": None, "raw_content": f"bullet_ids: ['{first.id}']"}),
        reward=0.0, success=False)
    assert cited_ids(episode, pb) == [second.id, first.id] and cited_steps(episode, pb) == 2


def test_the_oracle_as_reflector_is_refused_before_anything_is_written(tmp_path, capsys):
    # `make ace MODEL=oracle TRAIN=1 VAL=1`: the scripted oracle cannot reflect; one line, exit 2, no run directory
    assert ace_adapt.main(["model=oracle", "benchmark=tau2_retail", "--train", "1", "--val", "1", "--runs-dir",
                           str(tmp_path), "--run", "oracle"]) == 2
    err = unwrapped(capsys.readouterr().err).strip()
    assert len(err.splitlines()) == 1 and "cannot play ACE's Reflector" in err and "REFLECTOR=SCRIPTED" in err
    assert not (tmp_path / "oracle").exists()
