"""ACE playbook mechanics with a SCRIPTED LLM and a FAKE embedder: counters, deltas, dedup, budget."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ace_fakes import MODEL, FakeBagOfWordsEmbedder, install_scripted_roles
from strategies import TaskView, Trajectory
from memory_kit.memory_file import load_memory
from strategies.ace.adapt import AceSettings, Adapter
from strategies.ace.deltas import apply_operations
from strategies.ace.llm import JsonLLM, RoleError
from strategies.ace.playbook import Bullet, load_playbook, Playbook
from strategies.ace.pruning import deduplicate, drop_order, EmbeddingCache, enforce_budget
from strategies.ace.strategy import read_playbook_or_guidelines
from memory_kit.budget import token_counter
from memory_kit.memory_file import MemoryFileError

SAMPLE = "strategies/samples/ace_sample_playbook.jsonl"
count = token_counter("gpt-4o")


def book(*rows: tuple[str, str, int, int]) -> Playbook:
    pb = Playbook()
    for section, text, helpful, harmful in rows:
        pb, b = pb.add(section, text)
        pb = pb.put(replace(b, helpful=helpful, harmful=harmful))
    return pb


def trajectory(*assistant_texts: str, reward: float = 0.0) -> Trajectory:
    messages = [{"role": "user", "content": "please cancel order #W1"}]
    messages += [{"role": "assistant", "content": t} for t in assistant_texts]
    return Trajectory(task=TaskView("tau2_retail", "7", "cancel my order"), messages=tuple(messages),
                      reward=reward, success=reward == 1.0, feedback="db_match=False")


def adapter(**settings) -> Adapter:
    return Adapter(reflector=JsonLLM(MODEL), curator=JsonLLM(MODEL), count_tokens=count,
                   settings=AceSettings(dedup_threshold=None, **settings))


# --- the playbook as data ----------------------------------------------------------------------
def test_render_lines_ids_and_roundtrip(tmp_path):
    pb = book(("common_mistakes", "Check the order status first.", 0, 0), ("strategies", "Authenticate first.", 2, 1))
    assert [b.id for b in pb.bullets] == ["str-00002", "err-00001"]  # section order, ids keep one counter
    lines = pb.render().splitlines()
    assert "[str-00002] helpful=2 harmful=1 :: Authenticate first." in lines
    assert "[err-00001] helpful=0 harmful=0 :: Check the order status first." in lines
    assert lines[0] == "<ace_playbook>" and lines[-1] == "</ace_playbook>" and any("bullet_ids: [" in l for l in lines)
    pb.save(tmp_path / "p.jsonl", {"note": "t"})
    back, meta = load_playbook(tmp_path / "p.jsonl")
    assert back == pb and meta["kind"] == "ace_playbook" and meta["next_id"] == 3
    pb2, new = back.add("others", "x")
    assert new.id == "misc-00003"  # ids are never reused


def test_bad_playbook_file_names_the_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"_meta": {"kind": "ace_playbook"}}\n{"id": "str-00001", "section": "nope", "content": "x"}\n')
    with pytest.raises(MemoryFileError, match=r"bad.jsonl:2: .*unknown section"):
        load_playbook(path)


def test_playbook_is_in_the_memory_family_and_guidelines_convert():
    guidelines, meta = load_memory(SAMPLE)  # the generic loader reads a playbook's bullets as guidelines
    assert meta["kind"] == "ace_playbook" and "SAMPLE" in meta["note"]
    assert guidelines[0].id == "str-00001" and len(guidelines) == 7
    pb, meta = read_playbook_or_guidelines("strategies/samples/tau2_sample.jsonl")
    plain, _ = load_memory("strategies/samples/tau2_sample.jsonl")
    assert len(pb) == len(plain) and all(b.helpful == b.harmful == 0 for b in pb.bullets)
    assert {b.content for b in pb.bullets} == {g.text for g in plain}


# --- Reflector tags -> counters ----------------------------------------------------------------
def test_reflector_tags_update_counters_of_cited_bullets_only():
    roles = install_scripted_roles()
    pb = book(("strategies", "Authenticate first.", 1, 0), ("common_mistakes", "Never guess ids.", 0, 0),
              ("others", "Be brief.", 0, 0))
    roles.queue("reflector", {"error_analysis": "guessed an id", "key_insight": "look ids up",
                              "bullet_tags": [{"id": "str-00001", "tag": "helpful"},
                                              {"id": "err-00002", "tag": "harmful"},
                                              {"id": "misc-00003", "tag": "helpful"}]})  # misc not cited
    out, report = adapter().step(pb, trajectory("Verifying you first [str-00001].", "Using err-00002 here."))
    assert report.cited == ["str-00001", "err-00002"]
    assert (out.get("str-00001").helpful, out.get("str-00001").harmful) == (2, 0)
    assert (out.get("err-00002").helpful, out.get("err-00002").harmful) == (0, 1)
    assert out.get("misc-00003").helpful == 0 and report.ignored_tags == [{"id": "misc-00003", "tag": "helpful"}]
    assert roles.calls[0]["response_format"]["type"] == "json_schema"  # asked for JSON by schema
    assert "reward" not in roles.calls[0]["messages"][1]["content"]  # no ground truth unless allowed


def test_ground_truth_reaches_the_reflector_only_when_allowed():
    roles = install_scripted_roles()
    adapter(allow_ground_truth=True).step(Playbook(), trajectory("done", reward=1.0))
    prompt = roles.calls[0]["messages"][1]["content"]
    assert "reward=1.0" in prompt and "db_match=False" in prompt


# --- Curator deltas ----------------------------------------------------------------------------
ADD_UPDATE_REMOVE = {"operations": [
    {"type": "ADD", "section": "common_mistakes_to_avoid", "content": "Do not cancel a delivered order."},
    {"type": "UPDATE", "id": "str-00001", "content": "Authenticate by email, or name plus zip, first."},
    {"type": "REMOVE", "id": "misc-00002"}]}


def test_paper_mode_is_add_only_update_and_remove_are_rejected_and_recorded():
    roles = install_scripted_roles()
    pb = book(("strategies", "Authenticate first.", 3, 0), ("others", "Be brief.", 0, 2))
    roles.queue("curator", ADD_UPDATE_REMOVE)
    out, report = adapter().step(pb, trajectory("ok"))  # default settings: mode paper
    assert report.deltas["added"] == ["err-00003"] and report.deltas["updated"] == report.deltas["removed"] == []
    rejected = report.deltas["rejected"]
    assert [r["operation"]["type"] for r in rejected] == ["UPDATE", "REMOVE"]
    assert all("not allowed in this mode" in r["reason"] for r in rejected)
    assert out.get("str-00001").content == "Authenticate first." and "misc-00002" in out
    curator = next(c for c in roles.calls if c["role"] == "curator")
    assert "UPDATE" not in curator["messages"][0]["content"]  # the paper Curator is only offered ADD
    schema = curator["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["operations"]["items"]["properties"]["type"]["enum"] == ["ADD"]


def test_add_update_remove_are_merged():
    roles = install_scripted_roles()
    pb = book(("strategies", "Authenticate first.", 3, 0), ("others", "Be brief.", 0, 2))
    roles.queue("curator", ADD_UPDATE_REMOVE)
    out, report = adapter(update_remove=True).step(pb, trajectory("ok"))
    assert report.deltas["added"] == ["err-00003"] and report.deltas["updated"] == ["str-00001"]
    assert report.deltas["removed"] == ["misc-00002"] and report.deltas["rejected"] == []
    assert [b.id for b in out.bullets] == ["str-00001", "err-00003"]
    updated = out.get("str-00001")
    assert updated.content.startswith("Authenticate by email") and (updated.helpful, updated.created) == (3, 1)
    assert out.get("err-00003").helpful == 0 and pb.get("misc-00002") is not None  # the input is untouched


def test_invalid_operations_are_rejected_without_corrupting_the_playbook():
    pb = book(("strategies", "Authenticate first.", 3, 0), ("others", "Be brief.", 0, 0))
    before = pb.render()
    ops = [{"type": "UPDATE", "id": "str-99999", "content": "x"},  # no such bullet
           {"type": "ADD", "section": "astrology", "content": "x"},  # no such section
           {"type": "REMOVE"},  # no id
           {"type": "MERGE", "id": "str-00001"},  # not an operation we implement
           "ADD everything",  # not an object
           {"type": "ADD", "section": "others", "content": "  be   BRIEF. "},  # same text as misc-00002
           {"type": "REMOVE", "id": "misc-00002"},
           {"type": "UPDATE", "id": "misc-00002", "content": "too late, removed above"}]
    result = apply_operations(pb, ops)
    assert len(result.rejected) == 6 and result.removed == ["misc-00002"]
    reasons = [r.reason for r in result.rejected]
    assert "no bullet with id 'str-99999'" in reasons[0] and "unknown operation type 'MERGE'" in reasons[2]
    assert "same text as existing bullet misc-00002" in reasons[4]
    # an unknown section is filed under the reference's catch-all `others`, and the move is recorded
    assert result.added == ["misc-00003"] and result.summary()["refiled"] == [{"id": "misc-00003",
                                                                             "section": "astrology"}]
    assert [b.id for b in result.playbook.bullets] == ["str-00001", "misc-00003"]
    assert pb.render() == before  # the caller's playbook never changes


def test_a_malformed_curator_answer_changes_nothing_but_counters():
    roles = install_scripted_roles()
    pb = book(("strategies", "Authenticate first.", 0, 0))
    roles.queue("reflector", {"error_analysis": "", "key_insight": "",
                              "bullet_tags": [{"id": "str-00001", "tag": "helpful"}]})
    roles.queue("curator", "Sure! I would add a bullet about refunds.")  # not JSON
    out, report = adapter().step(pb, trajectory("[str-00001]"))
    assert [b.line for b in out.bullets] == ["[str-00001] helpful=1 harmful=0 :: Authenticate first."]
    assert report.errors and "curator: answer is not JSON" in report.errors[0]


def test_reflector_answer_off_schema_is_a_role_error():
    roles = install_scripted_roles()
    roles.queue("reflector", {"error_analysis": "x", "key_insight": "y",
                              "bullet_tags": [{"id": "str-00001", "tag": "great"}]})
    pb = book(("strategies", "Authenticate first.", 0, 0))
    out, report = adapter().step(pb, trajectory("[str-00001]"))
    assert out == pb and "does not match its schema" in report.errors[0] and len(roles.calls) == 1
    with pytest.raises(RoleError, match="not JSON"):
        JsonLLM(MODEL, completion=lambda **kw: {"choices": [{"message": {"content": "{oops"}}]}).ask(
            "s", "u", {"type": "object"}, "reflector")


# --- de-duplication ------------------------------------------------------------------------------
def test_dedup_merges_counters_into_the_oldest_bullet():
    pb = book(("strategies", "Always verify the order id before cancelling.", 2, 1),
              ("others", "Reply in the user's language.", 1, 0),
              ("common_mistakes", "always VERIFY the order id, before cancelling!", 3, 2))
    embedder = FakeBagOfWordsEmbedder()
    out, merges = deduplicate(pb, EmbeddingCache(embedder), threshold=0.90)
    assert [m["kept"] for m in merges] == ["str-00001"] and merges[0]["merged"] == "err-00003"
    kept = out.get("str-00001")
    assert (kept.helpful, kept.harmful) == (5, 3) and "err-00003" not in out and len(out) == 2
    assert out.get("misc-00002").helpful == 1
    assert merges[0]["similarity"] >= 0.90 and len(merges) == 1


def test_dedup_runs_in_an_update_when_configured():
    roles = install_scripted_roles()
    pb = book(("strategies", "Ask for the zip code to authenticate.", 1, 0))
    roles.queue("curator", {"operations": [{"type": "ADD", "section": "others",
                                            "content": "To authenticate, ask for the zip code."}]})
    ad = Adapter(reflector=JsonLLM(MODEL), curator=JsonLLM(MODEL), count_tokens=count,
                 settings=AceSettings(dedup=True, dedup_threshold=0.9), embeddings=EmbeddingCache(FakeBagOfWordsEmbedder()))
    out, report = ad.step(pb, trajectory("hi"))
    assert report.deltas["added"] == ["misc-00002"] and report.merged[0]["kept"] == "str-00001"
    assert [b.id for b in out.bullets] == ["str-00001"]


# --- the enforced budget ----------------------------------------------------------------------------
def test_budget_drop_order_is_net_harm_then_never_used_then_oldest():
    pb = book(("strategies", "A helpful veteran bullet about authentication.", 5, 0),   # str-1: score -5
              ("others", "An old bullet nobody ever used.", 0, 0),                    # misc-2: 0, unused, old
              ("others", "A bullet that helped once and hurt once.", 1, 1),           # misc-3: 0, used
              ("common_mistakes", "A harmful bullet that misled the agent.", 0, 3),   # err-4: score 3
              ("others", "A newer bullet nobody ever used.", 0, 0),                   # misc-5: 0, unused, newer
              ("common_mistakes", "A slightly harmful bullet.", 1, 2))                # err-6: score 1
    assert [b.id for b in drop_order(pb.bullets)] == ["err-00004", "err-00006", "misc-00002", "misc-00005",
                                                      "misc-00003", "str-00001"]
    full = count(pb.render())
    without_three = count(pb.remove("err-00004", "err-00006", "misc-00002").render())
    out, dropped, tokens = enforce_budget(pb, without_three, count)
    assert [d["id"] for d in dropped] == ["err-00004", "err-00006", "misc-00002"]
    assert tokens == without_three <= without_three < full and tokens == count(out.render())
    assert all("over token budget" in d["reason"] for d in dropped) and dropped[0]["harmful"] == 3
    same, nothing, _ = enforce_budget(pb, full, count)
    assert nothing == [] and same == pb


def test_budget_is_enforced_after_each_update_and_recorded():
    roles = install_scripted_roles()
    pb = book(("strategies", "Authenticate first.", 2, 0))
    budget = count(pb.render())  # no room for anything new
    roles.queue("curator", {"operations": [{"type": "ADD", "section": "others", "content": "Say goodbye."}]})
    out, report = adapter(playbook_token_budget=budget, enforce_budget=True).step(pb, trajectory("x"))
    assert report.deltas["added"] == ["misc-00002"] and [d["id"] for d in report.dropped] == ["misc-00002"]
    assert out == Playbook([pb.get("str-00001")], out.next_id) and report.tokens <= budget


def test_settings_reject_nonsense():
    with pytest.raises(ValueError, match="dedup_threshold"):
        AceSettings(dedup_threshold=1.5)
    with pytest.raises(ValueError, match="no embedder"):
        Adapter(reflector=JsonLLM(MODEL), curator=JsonLLM(MODEL), count_tokens=count,
                settings=AceSettings(mode="extended"))
    with pytest.raises(ValueError, match="mode must be one of"):
        AceSettings(mode="papr")
    paper, extended = AceSettings(), AceSettings(mode="extended")
    assert (paper.operations, paper.dedup_on, paper.budget) == (("ADD",), False, None)  # as the reference code
    assert (extended.operations, extended.dedup_on, extended.budget) == (("ADD", "UPDATE", "REMOVE"), True, 80_000)
    assert AceSettings(mode="extended", dedup=False).dedup_on is False  # one extension off in extended mode
    with pytest.raises(ValueError, match="content must be one non-empty line"):
        Bullet(id="str-00001", section="others", content="two\nlines")
