"""Doubts (session 37): a statement that reads as a change ("ported my number
to Mint") of a fact the offline rules cannot name (they do not know Mint and
Verizon are both carriers) is kept as a fact, with the facts it may be about,
for the user to settle; the answer ends the fact it changed, as the judge
would have. Real stores, real Kiwi, the hashing embedder."""
from __future__ import annotations

import json
from datetime import timedelta

import pytest

from naia_memory import InvalidInput, MemorySystem, UnknownMemoryError

from .conftest import naia_store

MINT = "ported my number to Mint last week, way cheaper now"


def _memory(kind, tmp_path, hashing, tokenizer, t0, *new):
    m = MemorySystem(store=naia_store(kind, tmp_path), embedder=hashing, tokenizer=tokenizer)
    for i, t in enumerate(["I'm on Verizon, the unlimited plan", "I play bass in a band", "I live in Denver"]):
        m.encode(content=t, now=t0 + timedelta(minutes=i))
    m.consolidate(now=t0 + timedelta(hours=1))
    for t in new:
        m.encode(content=t, now=t0 + timedelta(days=1))
    m.consolidate(now=t0 + timedelta(days=1, hours=1))
    return m


def _fact(m, text):
    return next(h for h in m.facts(include_inactive=True) if h.content == text)


@pytest.mark.parametrize("kind", ["json", "sqlite"])
def test_a_change_the_rules_cannot_place_is_asked_and_settled(kind, tmp_path, hashing, tokenizer, t0):
    m = _memory(kind, tmp_path, hashing, tokenizer, t0, MINT)
    [add] = [e for e in m.audit_log(op="ADD") if e["candidate"] == MINT]
    verizon = _fact(m, "I'm on Verizon, the unlimited plan")
    assert verizon.id in add["doubts"]  # logged with the decision
    [d] = m.doubts()
    assert (d.fact, d.said) == (MINT, MINT) and verizon.id in [i for i, _ in d.facts]
    assert json.loads(json.dumps(d.to_json()))["facts"][0]["id"] == d.facts[0][0]
    assert m.settle(memory_id=d.fact_id, replaces=verizon.id, now=t0 + timedelta(days=2)) == verizon.id
    assert m.doubts() == []
    assert _fact(m, "I'm on Verizon, the unlimited plan").metadata["status"] == "superseded"
    assert [h.content for h in m.history(memory_id=d.fact_id)] == ["I'm on Verizon, the unlimited plan", MINT]
    [entry] = m.audit_log(op="SETTLE")
    assert (entry["fact_id"], entry["target_id"]) == (d.fact_id, verizon.id)
    assert m.changes() == []  # the user's answer, not the judge's decision: nothing to review
    m.close()
    m = MemorySystem(store=naia_store(kind, tmp_path), embedder=hashing, tokenizer=tokenizer)
    assert m.doubts() == [] and _fact(m, "I'm on Verizon, the unlimited plan").metadata["status"] == "superseded"
    m.close()


def test_none_of_them_closes_the_doubt_and_ends_nothing(tmp_path, hashing, tokenizer, t0):
    m = _memory("json", tmp_path, hashing, tokenizer, t0, "we got a new store manager today, she seems strict")
    [d] = m.doubts()
    assert m.settle(memory_id=d.fact_id, replaces=None) is None
    assert m.doubts() == [] and all(h.metadata["status"] == "active" for h in m.facts(include_inactive=True))
    assert m.store.get(d.fact_id).metadata["settled"]["replaces"] is None


def test_what_cannot_be_settled_is_refused_and_changes_nothing(tmp_path, hashing, tokenizer, t0):
    m = _memory("json", tmp_path, hashing, tokenizer, t0, MINT)
    [d] = m.doubts()
    band = _fact(m, "I play bass in a band")
    before = {r.id: json.dumps(r.to_json(), sort_keys=True) for r in m.store.records()}
    with pytest.raises(UnknownMemoryError):
        m.settle(memory_id="fact_nope", replaces=None)
    with pytest.raises(InvalidInput, match="not one of the current facts"):
        m.settle(memory_id=d.fact_id, replaces=d.fact_id)  # never asked about
    with pytest.raises(InvalidInput, match="no open question"):
        m.settle(memory_id=band.id, replaces=None)
    with pytest.raises(InvalidInput):
        m.doubts(limit=0)
    assert {r.id: json.dumps(r.to_json(), sort_keys=True) for r in m.store.records()} == before


def test_a_doubt_whose_facts_all_ended_or_were_forgotten_is_not_listed(tmp_path, hashing, tokenizer, t0):
    m = _memory("json", tmp_path, hashing, tokenizer, t0, MINT)
    [d] = m.doubts()
    for i, _ in d.facts:
        m.forget(memory_id=i)
    assert m.doubts() == []
    assert "doubts" not in m.store.get(d.fact_id).metadata  # the links to what was forgotten went with it


def test_a_statement_the_rules_place_or_that_reads_as_no_change_asks_nothing(tmp_path, hashing, tokenizer, t0):
    m = _memory("json", tmp_path, hashing, tokenizer, t0, "I left the band last month", "I love sushi")
    assert m.doubts() == []
    assert _fact(m, "I play bass in a band").metadata["status"] == "superseded"  # the rules found that one


def test_rest_and_the_command_reach_doubts_and_settle(tmp_path, hashing, tokenizer, t0):
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from naia_memory.server.rest import ServerSettings, create_app

    m = _memory("json", tmp_path, hashing, tokenizer, t0, MINT)
    token = "test-token-0123456789"
    auth = {"Authorization": f"Bearer {token}"}
    with TestClient(create_app(m, ServerSettings(tokens={token: None}, rate=1000, burst=1000))) as c:
        [d] = c.get("/doubts", params={"user_id": "default"}, headers=auth).json()["results"]
        assert d["fact"] == MINT
        assert c.get("/doubts", params={"user_id": "bob"}, headers=auth).json()["results"] == []
        verizon = next(f["id"] for f in d["facts"] if "Verizon" in f["fact"])
        assert c.post(f"/memories/{d['fact_id']}/settle", json={"user_id": "bob", "replaces": verizon},
                      headers=auth).status_code == 404  # another user's fact reads as missing
        r = c.post(f"/memories/{d['fact_id']}/settle", json={"user_id": "default", "replaces": verizon}, headers=auth)
        assert r.status_code == 200 and r.json() == {"ended": verizon}
        again = c.post(f"/memories/{d['fact_id']}/settle", json={"user_id": "default", "replaces": None}, headers=auth)
        assert again.status_code == 400 and "no open question" in again.json()["detail"]
    m.close()

    import subprocess
    import sys
    from pathlib import Path

    m = _memory("json", tmp_path / "cli", hashing, tokenizer, t0, MINT)
    m.close()

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "naia_memory.cli", "--store", str(tmp_path / "cli" / "m.json"), *args],
                              cwd=Path(__file__).resolve().parents[1], capture_output=True, text=True, timeout=120)
    [d] = json.loads(cli("doubts", "--json").stdout)
    assert "changes" in cli("doubts").stdout
    out = cli("settle", d["fact_id"], "--none")
    assert out.returncode == 0 and out.stdout.strip() == "nothing ended"
    refused = cli("settle", d["fact_id"], "--none")
    assert refused.returncode == 2 and "no open question" in refused.stderr


# ---- a review of the first version (a helper session; each failed on it) -------------------------------------------

def _told(m, t0, *texts, days=1):
    for i, t in enumerate(texts):
        m.encode(content=t, now=t0 + timedelta(days=days, minutes=i))
    return m.consolidate(now=t0 + timedelta(days=days, hours=1))


def test_the_corrected_version_of_a_doubted_fact_is_offered_and_settled(tmp_path, hashing, tokenizer, t0):
    m = _memory("json", tmp_path, hashing, tokenizer, t0, MINT)
    verizon = _fact(m, "I'm on Verizon, the unlimited plan")
    fixed = m.edit(memory_id=verizon.id, content="I'm on Verizon, the unlimited family plan", now=t0 + timedelta(days=2))
    [d] = m.doubts()
    assert fixed in [i for i, _ in d.facts] and verizon.id not in [i for i, _ in d.facts]
    assert m.settle(memory_id=d.fact_id, replaces=fixed, now=t0 + timedelta(days=3)) == fixed


def test_settling_an_edited_statement_keeps_its_edit_history(tmp_path, hashing, tokenizer, t0):
    """The settle linked the corrected version to the ended fact, and the first version fell out of the history."""
    m = _memory("json", tmp_path, hashing, tokenizer, t0, MINT)
    [d] = m.doubts()
    verizon = _fact(m, "I'm on Verizon, the unlimited plan")
    new = m.edit(memory_id=d.fact_id, content="ported my number to Mint Mobile last week", now=t0 + timedelta(days=2))
    [d2] = m.doubts()
    assert d2.fact_id == new  # the correction carries the question
    m.settle(memory_id=new, replaces=verizon.id, now=t0 + timedelta(days=3))
    versions = [h.content for h in m.history(memory_id=new)]
    assert versions == ["I'm on Verizon, the unlimited plan", MINT, "ported my number to Mint Mobile last week"]
    assert versions == [h.content for h in m.history(memory_id=verizon.id)]


def test_settling_the_newest_doubt_passes_on_the_older_question(tmp_path, hashing, tokenizer, t0):
    m = _memory("json", tmp_path, hashing, tokenizer, t0, "switched my phone plan to AT&T")
    _told(m, t0, MINT, days=2)
    verizon, att = _fact(m, "I'm on Verizon, the unlimited plan"), _fact(m, "switched my phone plan to AT&T")
    first, second = m.doubts()
    assert (first.fact, second.fact) == (MINT, "switched my phone plan to AT&T")
    m.settle(memory_id=first.fact_id, replaces=att.id, now=t0 + timedelta(days=3))  # Mint replaced AT&T
    [d] = m.doubts()
    assert d.fact_id == first.fact_id and verizon.id in [i for i, _ in d.facts]  # and is asked about Verizon now


def test_a_doubt_never_names_another_subject(tmp_path, hashing, tokenizer, t0):
    m = MemorySystem(store=naia_store("json", tmp_path), embedder=hashing, tokenizer=tokenizer)
    _told(m, t0, "my sister Jiyoung lives in Busan", "I live in Denver", "I'm on Verizon, the unlimited plan",
          "I play bass in a band", days=0)
    _told(m, t0, "switched over to Jiyoung's carrier last week, way cheaper now")
    sister = _fact(m, "my sister Jiyoung lives in Busan")
    for d in m.doubts():
        assert sister.id not in [i for i, _ in d.facts]
        with pytest.raises(InvalidInput):
            m.settle(memory_id=d.fact_id, replaces=sister.id)
    assert _fact(m, "my sister Jiyoung lives in Busan").metadata["status"] == "active"


def test_the_older_change_under_a_settled_one_is_refused_until_that_is_taken_back(tmp_path, hashing, tokenizer, t0):
    m = _memory("json", tmp_path, hashing, tokenizer, t0, "I moved to Austin")  # the judge: Denver -> Austin
    _told(m, t0, "we finally sold the condo and moved out, way smaller place now", days=2)
    denver, austin = _fact(m, "I live in Denver"), _fact(m, "I moved to Austin")
    [d] = [d for d in m.doubts() if austin.id in [i for i, _ in d.facts]]
    m.settle(memory_id=d.fact_id, replaces=austin.id, now=t0 + timedelta(days=3))
    with pytest.raises(InvalidInput, match="take that change back first"):
        m.revert(memory_id=denver.id, now=t0 + timedelta(days=4))
    assert m.revert(memory_id=austin.id, now=t0 + timedelta(days=4)) == austin.id  # the user changes their mind
    m.revert(memory_id=denver.id, now=t0 + timedelta(days=5))
    assert _fact(m, "I live in Denver").metadata["status"] == "active"


def test_a_settled_fact_comes_back_once_its_replacement_is_forgotten(tmp_path, hashing, tokenizer, t0):
    m = _memory("json", tmp_path, hashing, tokenizer, t0, MINT)
    [d] = m.doubts()
    verizon = _fact(m, "I'm on Verizon, the unlimited plan")
    m.settle(memory_id=d.fact_id, replaces=verizon.id, now=t0 + timedelta(days=2))
    m.forget(memory_id=d.said_id)
    assert m.revert(memory_id=verizon.id, now=t0 + timedelta(days=3)) == verizon.id
    assert _fact(m, "I'm on Verizon, the unlimited plan").metadata["status"] == "active"


def test_the_lifecycle_user_answers_what_is_asked_as_the_script_says(tmp_path, hashing, tokenizer, t0):
    """``answer_doubts`` (the lifecycle experiment's user): the statement just said is settled with the fact
    naming a value it ended; any other doubt with "none"."""
    from experiments.tasks.lifecycle import answer_doubts

    m = _memory("json", tmp_path, hashing, tokenizer, t0, MINT, "we got a new store manager today, she seems strict")
    assert len(m.doubts()) == 2
    assert answer_doubts(m, MINT, {"Verizon"}, t0 + timedelta(days=2)) == (2, 1)
    assert _fact(m, "I'm on Verizon, the unlimited plan").metadata["status"] == "superseded"
    assert all(h.metadata["status"] == "active" for h in m.facts(include_inactive=True) if "Verizon" not in h.content)
    assert m.doubts() == []


def test_an_answer_or_a_correction_dated_before_the_fact_began_is_refused(tmp_path, hashing, tokenizer, t0):
    """It would end the fact before its start (a review's finding; edit had the same gap)."""
    m = _memory("json", tmp_path, hashing, tokenizer, t0, MINT)
    [d] = m.doubts()
    verizon = _fact(m, "I'm on Verizon, the unlimited plan")
    before = {r.id: json.dumps(r.to_json(), sort_keys=True) for r in m.store.records()}
    with pytest.raises(InvalidInput, match="before"):
        m.settle(memory_id=d.fact_id, replaces=verizon.id, now=t0 - timedelta(days=1))
    with pytest.raises(InvalidInput, match="before"):
        m.edit(memory_id=verizon.id, content="I'm on Verizon, the family plan", now=t0 - timedelta(days=1))
    assert {r.id: json.dumps(r.to_json(), sort_keys=True) for r in m.store.records()} == before
