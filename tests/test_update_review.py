"""Reviewing and taking back the update judge's decisions (``changes``, ``revert``):
the old fact is current again, the statement's own fact stays, the turns read
as current, the log says so, and nothing else is touched. Real stores, real
Kiwi, the hashing embedder (the judge's rules decide these cases, not closeness)."""
from __future__ import annotations

import json
from datetime import timedelta

import pytest

from .conftest import naia_store
from naia_memory import FactChange, InvalidInput, MemorySystem, UnknownMemoryError


def _system(kind, folder, hashing, tokenizer):
    return MemorySystem(store=naia_store(kind, folder), embedder=hashing, tokenizer=tokenizer)


def _told(m, t0, first, then):
    m.encode(content=first, now=t0)
    m.consolidate(now=t0 + timedelta(minutes=1))
    m.encode(content=then, now=t0 + timedelta(days=1))
    return m.consolidate(now=t0 + timedelta(days=1, minutes=1))


def _status(m, text):
    return next(h.metadata["status"] for h in m.facts(include_inactive=True) if h.content == text)


@pytest.mark.parametrize("kind", ["json", "sqlite"])
def test_a_wrong_update_is_listed_and_taken_back_and_stays_taken_back(kind, tmp_path, hashing, tokenizer, t0):
    m = _system(kind, tmp_path, hashing, tokenizer)
    first, then = "my favorite food is pad thai", "congee is my favorite thing to eat now"
    rep = _told(m, t0, first, then)
    assert [d.op.value for d in rep.decisions] == ["UPDATE"]
    [c] = m.changes()
    assert isinstance(c, FactChange)
    assert (c.op, c.old, c.new, c.said, c.reason) == ("UPDATE", first, then, then, "favorite_food changed")
    assert c.at == t0 + timedelta(days=1, minutes=1)
    assert json.loads(json.dumps(c.to_json()))["old_id"] == c.old_id

    assert m.revert(memory_id=c.old_id, now=t0 + timedelta(days=2)) == c.old_id
    assert m.changes() == []
    assert _status(m, first) == "active" and _status(m, then) == "active"
    old, new = m.store.get(c.old_id), m.store.get(c.new_id)
    assert old.valid_to is None and old.superseded_by is None and "superseded_reason" not in old.metadata
    assert old.metadata["reverted"][0]["successor"] == c.new_id
    # the new fact had no slot of its own: the one it took from the old fact is given back, with its label words
    assert new.supersedes is None and new.attribute is None and "attribute_from" not in new.metadata
    assert m.index.with_attribute("default", "favorite_food") == {c.old_id}
    [ep] = [e for e in m.store.records() if e.content == first and e.kind.value == "episode"]
    assert "stale_fact" not in ep.metadata  # the turn reads as current again
    [entry] = m.audit_log(op="REVERT")
    assert (entry["target_id"], entry["fact_id"], entry["reason"]) == (c.old_id, c.new_id, "favorite_food changed")
    assert entry in m.show(memory_id=c.old_id)["decisions"]
    assert m.recall_at(query="favorite food", at=t0 + timedelta(days=5)).facts  # valid at any time since it was said
    assert any(h.id == c.old_id for h in m.recall_at(query="favorite food pad thai", at=t0 + timedelta(days=5)).facts)
    m.close()

    m = _system(kind, tmp_path, hashing, tokenizer)  # on disk, not only in the process
    assert _status(m, first) == "active" and m.changes() == []
    assert m.store.get(c.new_id).supersedes is None
    m.close()


def test_the_replacing_fact_names_the_decision_too_and_a_deletion_is_taken_back(tmp_path, hashing, tokenizer, t0):
    m = _system("json", tmp_path, hashing, tokenizer)
    rep = _told(m, t0, "I work at the Costco on 5th street as a cashier", "I quit my job at Costco last week")
    assert [d.op.value for d in rep.decisions] == ["DELETE"]
    [c] = m.changes()
    assert (c.op, c.new_id, c.new) == ("DELETE", None, None)
    assert m.revert(memory_id=c.old_id) == c.old_id
    assert _status(m, c.old) == "active"

    m2 = _system("json", tmp_path / "b", hashing, tokenizer)
    _told(m2, t0, "my favorite food is pad thai", "congee is my favorite thing to eat now")
    [c] = m2.changes()
    assert m2.revert(memory_id=c.new_id) == c.old_id  # named by the fact that replaced it
    assert _status(m2, c.old) == "active"


def test_what_cannot_be_reverted_is_refused_and_changes_nothing(tmp_path, hashing, tokenizer, t0):
    m = _system("json", tmp_path, hashing, tokenizer)
    _told(m, t0, "my favorite food is pad thai", "congee is my favorite thing to eat now")
    [c] = m.changes()
    edited = m.edit(memory_id=c.new_id, content="congee, every morning, is my favorite food now")
    before = {r.id: json.dumps(r.to_json(), sort_keys=True) for r in m.store.records()}
    log_before = len(m.audit_log())
    with pytest.raises(UnknownMemoryError):
        m.revert(memory_id="fact_nope")
    # (until session 40 the replacement's id and its edited version were refused here, though changes() hands out
    # that id for revert: both now take back the judge's decision, the next test; an edit itself is not reverted)
    assert edited != c.new_id
    m.encode(content="I live in Denver", now=t0 + timedelta(days=3))
    m.consolidate(now=t0 + timedelta(days=3, minutes=1))
    before = {r.id: json.dumps(r.to_json(), sort_keys=True) for r in m.store.records()}
    log_before = len(m.audit_log())
    [home] = [h for h in m.facts() if h.content == "I live in Denver"]
    with pytest.raises(InvalidInput, match="active"):
        m.revert(memory_id=home.id)  # current, replaced nothing
    with pytest.raises(InvalidInput):
        m.revert(memory_id="")
    with pytest.raises(InvalidInput):
        m.changes(limit=0)
    assert {r.id: json.dumps(r.to_json(), sort_keys=True) for r in m.store.records()} == before
    assert len(m.audit_log()) == log_before
    # the judge's decision is still in force beneath the edit, and can still be taken back
    [c2] = m.changes()
    assert c2.old_id == c.old_id
    m.revert(memory_id=c.old_id)
    with pytest.raises(InvalidInput, match="active"):
        m.revert(memory_id=c.old_id)  # twice


def test_changes_are_newest_first_per_project_and_since(tmp_path, hashing, tokenizer, t0):
    m = _system("json", tmp_path, hashing, tokenizer)
    _told(m, t0, "my favorite food is pad thai", "congee is my favorite thing to eat now")
    later = t0 + timedelta(days=10)
    _told(m, later, "I live in Denver", "I just moved to Austin, I live in Austin now")
    m.encode(content="I live in Lisbon", project="other", now=t0)
    m.consolidate(now=t0 + timedelta(minutes=1))
    m.encode(content="I moved to Porto, I live in Porto now", project="other", now=t0 + timedelta(days=1))
    m.consolidate(now=t0 + timedelta(days=1, minutes=1))
    assert [c.old for c in m.changes()] == ["I live in Denver", "my favorite food is pad thai"]
    assert [c.old for c in m.changes(limit=1)] == ["I live in Denver"]
    assert [c.old for c in m.changes(since=later)] == ["I live in Denver"]
    assert [c.old for c in m.changes(project="other")] == ["I live in Lisbon"]
    # a turn forgotten since: the decision is listed without its words
    [c] = m.changes(project="other")
    m.forget(memory_id=c.said_id)
    assert all(x.said_id != c.said_id or x.said is None for x in m.changes(project="other"))


def test_a_turn_with_another_ended_fact_stays_stale(tmp_path, hashing, tokenizer, t0):
    """One turn, two facts, both ended by later turns: reverting one leaves the turn stale for the other."""
    m = _system("json", tmp_path, hashing, tokenizer)
    m.encode(content="I live in Denver. My favorite food is pad thai.", now=t0)
    m.consolidate(now=t0 + timedelta(minutes=1))
    m.encode(content="I just moved to Austin, I live in Austin now", now=t0 + timedelta(days=1))
    m.encode(content="congee is my favorite thing to eat now", now=t0 + timedelta(days=2))
    m.consolidate(now=t0 + timedelta(days=2, minutes=1))
    ended = {c.old: c for c in m.changes()}
    assert len(ended) == 2, sorted(ended)
    [ep] = [e for e in m.store.records() if e.kind.value == "episode" and e.content.startswith("I live in Denver")]
    home = next(c for o, c in ended.items() if "Denver" in o)
    food = next(c for o, c in ended.items() if "pad thai" in o)
    m.revert(memory_id=home.old_id)
    assert m.store.get(ep.id).metadata["stale_fact"] == food.old_id
    m.revert(memory_id=food.old_id)
    assert "stale_fact" not in m.store.get(ep.id).metadata


def _favourite(tmp_path, tokenizer, t0, hashing, project="default"):
    from naia_memory import LocalStore

    m = MemorySystem(store=LocalStore(tmp_path / "m.json"), embedder=hashing, tokenizer=tokenizer)
    m.encode(content="my favorite food is pad thai", project=project, now=t0)
    m.consolidate(now=t0 + timedelta(minutes=1))
    m.encode(content="congee is my favorite thing to eat now", project=project, now=t0 + timedelta(days=1))
    m.consolidate(now=t0 + timedelta(days=1, minutes=1))
    return m


def test_rest_lists_and_reverts_for_its_own_user_only(tmp_path, tokenizer, t0, hashing):
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from naia_memory.server.rest import ServerSettings, create_app

    m = _favourite(tmp_path, tokenizer, t0, hashing, project="alice")
    token, bob = "test-token-0123456789", "bob-token-0123456789ab"
    app = create_app(m, ServerSettings(tokens={token: None, bob: "bob"}, rate=1000, burst=1000))
    alice = {"Authorization": f"Bearer {token}"}
    with TestClient(app) as c:
        [ch] = c.get("/changes", params={"user_id": "alice"}, headers=alice).json()["results"]
        assert (ch["op"], ch["old"], ch["new"]) == ("UPDATE", "my favorite food is pad thai", "congee is my favorite thing to eat now")
        assert c.get("/changes", params={"user_id": "bob"}, headers={"Authorization": f"Bearer {bob}"}).json()["results"] == []
        # bob's token cannot act for alice, and alice's fact is unknown to bob
        assert c.post(f"/memories/{ch['old_id']}/revert", json={"user_id": "alice"},
                      headers={"Authorization": f"Bearer {bob}"}).status_code == 403
        assert c.post(f"/memories/{ch['old_id']}/revert", json={"user_id": "bob"},
                      headers={"Authorization": f"Bearer {bob}"}).status_code == 404
        assert c.get("/changes", params={"user_id": "alice", "limit": 0}, headers=alice).status_code == 422
        r = c.post(f"/memories/{ch['new_id']}/revert", json={"user_id": "alice"}, headers=alice)
        assert r.status_code == 200 and r.json() == {"id": ch["old_id"]}
        again = c.post(f"/memories/{ch['old_id']}/revert", json={"user_id": "alice"}, headers=alice)
        assert again.status_code == 400 and "active" in again.json()["detail"]
        assert c.get("/changes", params={"user_id": "alice"}, headers=alice).json()["results"] == []
        paths = {(p, v) for p, ops in c.get("/openapi.json").json()["paths"].items() for v in ops}
        assert {("/changes", "get"), ("/memories/{memory_id}/revert", "post")} <= paths
    m.close()


def test_cli_lists_and_reverts(tmp_path, tokenizer, t0, hashing):
    import subprocess
    import sys
    from pathlib import Path

    _favourite(tmp_path, tokenizer, t0, hashing).close()
    path = str(tmp_path / "m.json")

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "naia_memory.cli", "--store", path, *args],
                              cwd=Path(__file__).resolve().parents[1], capture_output=True, text=True, timeout=120)
    listed = cli("changes")
    assert listed.returncode == 0 and "pad thai" in listed.stdout and "favorite_food changed" in listed.stdout
    [ch] = json.loads(cli("changes", "--json").stdout)
    out = cli("revert", ch["old_id"])
    assert out.returncode == 0 and out.stdout.strip() == ch["old_id"]
    assert json.loads(cli("changes", "--json").stdout) == []
    refused = cli("revert", ch["old_id"])
    assert refused.returncode == 2 and "active" in refused.stderr and "Traceback" not in refused.stderr


def test_said_again_after_a_revert_is_no_new_change_and_a_forget_scrubs_the_entry(tmp_path, hashing, tokenizer, t0):
    m = _system("json", tmp_path, hashing, tokenizer)
    _told(m, t0, "my favorite food is pad thai", "congee is my favorite thing to eat now")
    [c] = m.changes()
    m.revert(memory_id=c.old_id, now=t0 + timedelta(days=2))
    m.encode(content="congee is my favorite thing to eat now", now=t0 + timedelta(days=3))
    rep = m.consolidate(now=t0 + timedelta(days=3, minutes=1))
    assert [(d.op.value, d.reason) for d in rep.decisions] == [("NOOP", "near-duplicate")]
    assert _status(m, "my favorite food is pad thai") == "active" and m.changes() == []
    m.forget(memory_id=c.old_id)
    [entry] = m.audit_log(op="REVERT")
    assert entry.get("forgotten") is True and "reason" not in entry and entry["target_id"] == c.old_id


# ---- a review of the above (a helper session; each failed on the first version) --------------------------------------

def _in_slot(m, attribute, project="default"):
    return sorted(m.store.get(i).content for i in m.index.with_attribute(project, attribute)
                  if m.store.get(i).status == "active")


def test_revert_after_the_replacing_fact_was_edited_gives_the_taken_slot_back(tmp_path, hashing, tokenizer, t0):
    """edit() copies the slot the replacing fact took into its new version: a revert gave it back from the
    old version only, and the edited one kept it beside the fact made current again."""
    m = _system("json", tmp_path, hashing, tokenizer)
    _told(m, t0, "my favorite food is pad thai", "congee is my favorite thing to eat now")
    [c] = m.changes()
    m.edit(memory_id=c.new_id, content="congee with pork is my favorite thing to eat now", now=t0 + timedelta(days=2))
    m.revert(memory_id=c.old_id, now=t0 + timedelta(days=3))
    assert _in_slot(m, "favorite_food") == ["my favorite food is pad thai"]


def test_a_decision_whose_turn_was_forgotten_is_still_listed_and_revertable(tmp_path, hashing, tokenizer, t0):
    """forget() dropped the link to the turn that ended the fact, and with it the decision from changes()."""
    m = _system("json", tmp_path, hashing, tokenizer)
    _told(m, t0, "my favorite food is pad thai", "congee is my favorite thing to eat now")
    m.encode(content="congee is my favorite thing to eat now", now=t0 + timedelta(days=2))  # a second source
    m.consolidate(now=t0 + timedelta(days=2, minutes=1))
    [c] = m.changes()
    m.forget(memory_id=c.said_id)
    assert [(x.old_id, x.said_id, x.said) for x in m.changes()] == [(c.old_id, None, None)]
    assert m.revert(memory_id=c.old_id) == c.old_id


def test_the_middle_of_a_chain_is_refused_until_the_later_change_is_taken_back(tmp_path, hashing, tokenizer, t0):
    """A -> B -> C, C taking the slot through B: reverting A alone left A and C both current in one slot."""
    m = _system("json", tmp_path, hashing, tokenizer)
    _told(m, t0, "my favorite food is pad thai", "congee is my favorite thing to eat now")
    m.encode(content="ramen is my favorite thing to eat now", now=t0 + timedelta(days=3))
    m.consolidate(now=t0 + timedelta(days=3, minutes=1))
    later, first = m.changes()
    assert (first.old, later.old) == ("my favorite food is pad thai", "congee is my favorite thing to eat now")
    with pytest.raises(InvalidInput, match="take that change back first"):
        m.revert(memory_id=first.old_id)
    m.revert(memory_id=later.old_id)
    m.revert(memory_id=first.old_id)
    assert _in_slot(m, "favorite_food") == ["my favorite food is pad thai"]
    assert m.changes() == []


@pytest.mark.parametrize("by", ["edited", "replacement", "old"])
def test_a_replacement_the_user_edited_is_listed_as_it_reads_and_can_be_taken_back_by_any_id(by, tmp_path, hashing,
                                                                                              tokenizer, t0):
    """Session 40's review: after the user edited the replacing fact, ``changes()`` still showed its first text,
    and ``revert`` refused both its id and the edited version's ("ended by a user's edit")."""
    m = _system("json", tmp_path, hashing, tokenizer)
    first, then = "my favorite food is pad thai", "congee is my favorite thing to eat now"
    _told(m, t0, first, then)
    [c] = m.changes()
    edited = m.edit(memory_id=c.new_id, content="congee with pork is my favorite thing to eat now",
                    now=t0 + timedelta(days=2))
    [c2] = m.changes()
    assert (c2.old_id, c2.new_id, c2.new) == (c.old_id, edited, "congee with pork is my favorite thing to eat now")
    target = {"edited": edited, "replacement": c.new_id, "old": c.old_id}[by]
    assert m.revert(memory_id=target, now=t0 + timedelta(days=3)) == c.old_id
    assert m.changes() == []
    assert _status(m, first) == "active" and _status(m, "congee with pork is my favorite thing to eat now") == "active"
    assert m.store.get(c.new_id).supersedes is None  # the decision's link is gone from the version it named
    m.close()


@pytest.mark.parametrize("kind", ["json", "sqlite"])
def test_an_older_statement_imported_later_does_not_end_the_newer_fact(kind, tmp_path, hashing, tokenizer, t0):
    """Session 40's review: the judge compared what was said, not when; an
    older chat log imported after a newer turn ended the newer fact, and
    recall answered with the older value."""
    m = _system(kind, tmp_path, hashing, tokenizer)
    m.encode(content="I moved to Busan, I live in Busan now", now=t0 + timedelta(days=30))
    m.consolidate(now=t0 + timedelta(days=30, minutes=1))
    m.encode_many(turns=[{"content": "I live in Seoul", "now": t0}])  # said a month before
    [d] = m.consolidate(now=t0 + timedelta(days=31)).decisions
    assert d.op.value == "ADD" and d.reason.startswith("an earlier value")
    assert _status(m, "I moved to Busan, I live in Busan now") == "active" and _status(m, "I live in Seoul") == "superseded"
    seoul = next(h for h in m.facts(include_inactive=True) if h.content == "I live in Seoul")
    assert seoul.metadata["valid_to"] == t0 + timedelta(days=30)  # until Busan was said
    assert [h.content for h in m.recall(query="where do I live", now=t0 + timedelta(days=40)).facts] == \
        ["I moved to Busan, I live in Busan now"]
    m.close()


def test_an_earlier_value_ends_where_its_line_went_on_and_is_not_a_decision_to_review(tmp_path, hashing, tokenizer, t0):
    """A chain Seoul (day 10) -> Busan (day 30), then a log imported with Daegu
    said on day 0: Daegu is the value before Seoul, not beside it; it is no
    judge's decision (changes() does not list it, revert refuses it), and the
    change Seoul -> Busan stays the one listed and taken back."""
    m = _system("json", tmp_path, hashing, tokenizer)
    m.encode(content="I live in Seoul", now=t0 + timedelta(days=10))
    m.consolidate(now=t0 + timedelta(days=10, minutes=1))
    m.encode(content="I moved to Busan, I live in Busan now", now=t0 + timedelta(days=30))
    m.consolidate(now=t0 + timedelta(days=30, minutes=1))
    m.encode_many(turns=[{"content": "I live in Daegu", "now": t0}])
    m.consolidate(now=t0 + timedelta(days=31))
    daegu = next(h for h in m.facts(include_inactive=True) if h.content == "I live in Daegu")
    seoul = next(h for h in m.facts(include_inactive=True) if h.content == "I live in Seoul")
    assert daegu.metadata["status"] == "superseded" and daegu.metadata["valid_to"] == t0 + timedelta(days=10)
    assert m.store.get(daegu.id).superseded_by == seoul.id
    [c] = m.changes()
    assert (c.old, c.new) == ("I live in Seoul", "I moved to Busan, I live in Busan now")
    with pytest.raises(InvalidInput):
        m.revert(memory_id=daegu.id)
    assert m.revert(memory_id=c.new_id) == seoul.id  # the listed change, not the earlier value
    m.close()


def test_a_correction_does_not_make_a_newer_statement_an_earlier_value(tmp_path, hashing, tokenizer, t0):
    """An edit dates its version when it was made: a move said before the
    user corrected a typo in the old home, consolidated after, was taken for
    an earlier value and the update lost (a review of the first version)."""
    m = _system("json", tmp_path, hashing, tokenizer)
    m.encode(content="I live in Seoul", now=t0)
    m.consolidate(now=t0 + timedelta(minutes=1))
    m.encode(content="I moved to Busan, I live in Busan now", now=t0 + timedelta(days=1))
    old = next(h for h in m.facts() if h.content == "I live in Seoul")
    m.edit(memory_id=old.id, content="I live in Seoul, in Mapo-gu", now=t0 + timedelta(days=1, minutes=5))
    [d] = m.consolidate(now=t0 + timedelta(days=1, minutes=30)).decisions
    assert d.op.value == "UPDATE"
    assert [h.content for h in m.facts()] == ["I moved to Busan, I live in Busan now"]
    m.close()


def test_changes_tell_when_the_decision_was_made_and_a_revert_clears_it(tmp_path, hashing, tokenizer, t0):
    m = _system("json", tmp_path, hashing, tokenizer)
    m.encode(content="I live in Seoul", now=t0)
    m.encode(content="I moved to Busan, I live in Busan now", now=t0 + timedelta(days=30))
    m.consolidate(now=t0 + timedelta(days=60))
    [c] = m.changes()
    assert c.at == t0 + timedelta(days=60) and m.store.get(c.old_id).metadata["superseded_at"]
    m.revert(memory_id=c.old_id)
    assert "superseded_at" not in m.store.get(c.old_id).metadata
    m.close()


def test_an_older_log_of_several_turns_keeps_its_values_in_the_order_they_were_said(tmp_path, hashing, tokenizer, t0):
    m = _system("json", tmp_path, hashing, tokenizer)
    m.encode(content="I live in Seoul", now=t0 + timedelta(days=10))
    m.consolidate(now=t0 + timedelta(days=10, minutes=1))
    m.encode_many(turns=[{"content": "I live in Daegu", "now": t0},
                         {"content": "I moved to Incheon, I live in Incheon now", "now": t0 + timedelta(days=5)}])
    m.consolidate(now=t0 + timedelta(days=11))
    facts = {h.content: h for h in m.facts(include_inactive=True)}
    daegu, incheon = facts["I live in Daegu"], facts["I moved to Incheon, I live in Incheon now"]
    assert daegu.metadata["valid_to"] == t0 + timedelta(days=5) and m.store.get(daegu.id).superseded_by == incheon.id
    assert incheon.metadata["valid_to"] == t0 + timedelta(days=10)
    assert [h.content for h in m.facts()] == ["I live in Seoul"]
    m.close()
