"""The export's provenance: sidecar and (with --extended) per-record provenance; strict file unchanged."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timedelta

import pytest
import sqlalchemy as sa
from test_export_cli import cli, schema_errors

from fireval.core.errors import FirevalError, InputError
from fireval.formats.fire_json import schema_problems
from fireval.judging import provenance as P
from fireval.judging.export import default_provenance_path, export_fire_json
from fireval.judging.gold import GOLD_BASE, GoldPair
from fireval.judging.pool import PoolItem
from fireval.judging.schema import SCHEMA_HEAD
from fireval.judging.store import Store


def campaign(st: Store) -> dict[str, int]:
    """A small campaign with every kind of event; returns the ids the assertions need."""
    st.add_items(
        [PoolItem(f"caption {i}", [f"c{i}"], f"v{i}", {"CLIP4CLIP": 1}, i == 0) for i in range(6)], "MSRVTT"
    )
    a, b = (st.add_annotator(n)[0] for n in ("a", "b"))
    boss = st.add_annotator("boss", "admin")[0]
    tie = st.next_item(a.id).id  # the double item: a and b disagree, the admin adjudicates
    st.submit(a.id, tie, "relevant")
    assert st.next_item(b.id).id == tie
    st.submit(b.id, tie, "irrelevant")
    st.adjudicate(boss.id, tie, "irrelevant")
    flagged = st.next_item(a.id).id  # flagged by a, resolved by the admin
    st.flags.flag(a.id, flagged, "is that a dog or a wolf?")
    st.flags.resolve_flagged(boss.id, flagged, "relevant")
    changed = st.next_item(b.id).id  # b answers, then changes the answer
    st.submit(b.id, changed, "relevant")
    st.history.change(b.id, changed, "irrelevant")
    undone = st.next_item(b.id).id  # b answers, undoes, answers again
    st.submit(b.id, undone, "irrelevant")
    st.undo(b.id, undone)
    st.submit(b.id, undone, "relevant")
    open_flag = st.next_item(b.id).id  # still open in the review queue
    st.flags.flag(b.id, open_flag, "")
    failed = st.next_item(a.id).id  # last: a's video failed: a skip with a reason
    st.flags.skip(a.id, failed, "video failed")
    st.gold.load([GoldPair("gold caption", "gv", "relevant")])
    st.gold.rate = 1.0
    g = st.gold.due(a.id)
    st.submit(a.id, g.id, "irrelevant")  # a gets the gold item wrong
    st.gold.rate = 0.0
    return {
        "a": a.id,
        "b": b.id,
        "boss": boss.id,
        "tie": tie,
        "flagged": flagged,
        "failed": failed,
        "changed": changed,
        "undone": undone,
        "open_flag": open_flag,
    }


def table(st: Store, sql: str) -> list:
    with st.engine.connect() as conn:
        return [tuple(r) for r in conn.execute(sa.text(sql))]


def test_sidecar_round_trip_and_strict_file_still_valid(store_url: str, tmp_path) -> None:
    st = Store(store_url)
    try:
        ids = campaign(st)
        out, side = tmp_path / "fire.json", tmp_path / "fire.provenance.json"
        counts = export_fire_json(st, out, provenance=side)
        doc = json.loads(out.read_text())
        prov = P.read_sidecar(side)  # checks the pair
        # the strict file: valid for the authors' data model, no provenance inside
        assert schema_errors(doc) == [] and schema_problems(doc) == []
        assert all(P.RECORD_KEY not in r for r in doc["annotations"] + doc["disagreements"])
        # the sidecar names this file exactly
        assert prov["format"] == P.FORMAT and prov["version"] == P.VERSION
        assert prov["fire_json"]["file"] == "fire.json"
        assert prov["fire_json"]["sha256"] == hashlib.sha256(out.read_bytes()).hexdigest()
        assert prov["fire_json"]["annotations"] == counts["annotations"] == len(doc["annotations"])
        assert prov["source_annotator_map_md5"] == doc["source_annotator_map_md5"]
        assert prov["store"]["schema_revision"] == SCHEMA_HEAD == "0010"
        # every FIRE record is an item of the sidecar, with the same votes
        items = {(i["query"], i["video_id"]): i for i in prov["items"]}
        for section in ("annotations", "disagreements"):
            for r in doc[section]:
                it = items[(r["query"], r["video_id"])]
                assert it["section"] == section and it["response_ids"] == r["response_ids"]
                if section == "annotations":
                    assert it["label"] == r["label"]
        by_id = {i["item_id"]: i for i in prov["items"]}
        assert (
            by_id[ids["tie"]]["decided_by"] == "adjudication" and by_id[ids["tie"]]["label"] == "irrelevant"
        )
        assert by_id[ids["flagged"]]["decided_by"] == "adjudication"
        assert (
            by_id[ids["changed"]]["decided_by"] == "majority"
            and by_id[ids["changed"]]["label"] == "irrelevant"
        )
        assert by_id[ids["failed"]]["section"] is None  # a skip is no vote: nothing to export
        # flags: item, annotator, reason, time, resolution, resolver
        flags = {f["item_id"]: f for f in prov["flags"]}
        f = flags[ids["flagged"]]
        assert (f["annotator_id"], f["reason"], f["status"], f["resolution"], f["resolved_by"]) == (
            ids["a"],
            "is that a dog or a wolf?",
            "resolved",
            "relevant",
            ids["boss"],
        )
        assert f["created_at"] <= f["resolved_at"]
        assert flags[ids["open_flag"]]["status"] == "open" and flags[ids["open_flag"]]["resolved_by"] is None
        # adjudications come from the stored kind
        adj = {(x["item_id"], x["annotator_id"], x["label"], x["decided"]) for x in prov["adjudications"]}
        assert adj == {
            (ids["tie"], ids["boss"], "irrelevant", True),
            (ids["flagged"], ids["boss"], "relevant", True),
        }
        # skips with their reasons
        skips = {(s["item_id"], s["annotator_id"]): s["reason"] for s in prov["skips"]}
        assert skips == {
            (ids["flagged"], ids["a"]): P.FLAGGED,
            (ids["failed"], ids["a"]): "video failed",
            (ids["open_flag"], ids["b"]): P.FLAGGED,
        }
        # the audit trail is the whole label_events table; changes and undo are in it
        assert [e["event_id"] for e in prov["label_events"]] == [
            r[0] for r in table(st, "SELECT id FROM label_events ORDER BY id")
        ]
        actions = [(e["item_id"], e["action"], e["label"], e["previous"]) for e in prov["label_events"]]
        assert (ids["changed"], "change", "irrelevant", "relevant") in actions
        assert (ids["undone"], "withdraw", None, "irrelevant") in actions
        # each event carries the kind the audit table recorded: the admin's answers are the two
        # adjudications, every other event is about a vote
        assert [(e["event_id"], e["kind"]) for e in prov["label_events"]] == table(
            st, "SELECT id, kind FROM label_events ORDER BY id"
        )
        assert {(e["item_id"], e["action"]) for e in prov["label_events"] if e["kind"] == "adjudication"} == {
            (ids["tie"], "answer"),
            (ids["flagged"], "answer"),
        }
        assert all(e["kind"] == "vote" for e in prov["label_events"] if e["annotator_id"] != ids["boss"])
        # labels: every current row, with its kind, matching the table
        assert sorted((x["label_id"], x["label"], x["kind"]) for x in prov["labels"]) == sorted(
            table(st, "SELECT id, label, kind FROM labels")
        )
        # gold
        assert prov["gold"]["items"] == [
            {"gold_id": 1, "query": "gold caption", "video_id": "gv", "answer": "relevant"}
        ]
        ga = prov["gold"]["answers"]
        assert [(g["annotator_id"], g["label"], g["correct"]) for g in ga] == [
            (ids["a"], "irrelevant", False)
        ]
        s = prov["summary"]
        assert (s["label_changes"], s["withdrawals"], s["adjudications"], s["skips"]) == (1, 1, 2, 3)
        assert (
            s["flags"] == {"open": 1, "resolved relevant": 1}
            and s["gold_answers"] == 1
            and s["gold_correct"] == 0
        )
        assert [a["id"] for a in prov["annotators"]] == [ids["a"], ids["b"], ids["boss"]]
        assert "name" not in prov["annotators"][0]  # names stay in the store, as in the FIRE file
    finally:
        st.close()


def test_extended_records_carry_their_provenance(tmp_path) -> None:
    st = Store(f"sqlite:///{tmp_path / 's.db'}")
    try:
        ids = campaign(st)
        strict, ext = tmp_path / "strict.json", tmp_path / "ext.json"
        export_fire_json(st, strict, provenance=tmp_path / "p.json")
        export_fire_json(st, ext, extended=True)
        assert not (tmp_path / "ext.provenance.json").exists()  # the library writes a sidecar only on request
        d_strict, d_ext = json.loads(strict.read_text()), json.loads(ext.read_text())
        assert schema_problems(d_ext, extended=True) == []
        assert any("not a field of the FIRE data model" in p for p in schema_problems(d_ext))
        recs = d_ext["annotations"] + d_ext["disagreements"]
        assert all(P.RECORD_KEY in r for r in recs)
        # without the extra key the records are the strict file's
        assert [{k: v for k, v in r.items() if k != P.RECORD_KEY} for r in recs] == d_strict[
            "annotations"
        ] + d_strict["disagreements"]
        prov = json.loads((tmp_path / "p.json").read_text())
        per_item = P.by_item(prov)
        for r in recs:
            assert r[P.RECORD_KEY] == per_item[r[P.RECORD_KEY]["item_id"]]
        tie = next(r for r in recs if r[P.RECORD_KEY]["item_id"] == ids["tie"])
        assert tie["annotator_labels"] == ["relevant", "irrelevant"] and tie["label"] == "irrelevant"
        assert [a["annotator_id"] for a in tie[P.RECORD_KEY]["adjudications"]] == [ids["boss"]]
        flagged = next(r for r in recs if r[P.RECORD_KEY]["item_id"] == ids["flagged"])
        assert (
            flagged["annotator_ids"] == []
            and flagged[P.RECORD_KEY]["flags"][0]["reason"] == "is that a dog or a wolf?"
        )
        with pytest.raises(InputError, match="needs --extended"):
            export_fire_json(st, tmp_path / "x.json", record_provenance=True)
        assert not (tmp_path / "x.json").exists()
    finally:
        st.close()


def test_nothing_is_written_when_either_file_fails(tmp_path) -> None:
    st = Store(f"sqlite:///{tmp_path / 's.db'}")
    try:
        st.add_items([PoolItem("a caption", ["c0"], "v0", {"GRAM": 1})], "MSRVTT")
        a = st.add_annotator("a")[0]
        st.submit(a.id, st.next_item(a.id).id, "relevant")
        out, side = tmp_path / "f.json", tmp_path / "f.provenance.json"
        with pytest.raises(InputError, match="GRAM"):  # strict: GRAM is no model of the data model
            export_fire_json(st, out, provenance=side)
        assert not out.exists() and not side.exists()
        out.write_text("old")  # a sidecar that cannot be written leaves the old FIRE file as it was
        blocker = tmp_path / "blocker"
        blocker.write_text("a file, not a directory")
        with pytest.raises(OSError):
            export_fire_json(st, out, extended=True, provenance=blocker / "p.json")
        assert out.read_text() == "old"
        assert sorted(p.name for p in tmp_path.iterdir()) == ["blocker", "f.json", "s.db"] + sorted(
            p.name for p in tmp_path.iterdir() if p.name.startswith("s.db-")
        )
    finally:
        st.close()


def test_the_sidecar_records_every_gold_answer_event_and_the_fire_file_stays_the_same(
    store_url: str, tmp_path
) -> None:
    """Accuracy scores the first gold answer (by design), but the sidecar must still record what
    the annotator did with it afterwards: a change, a vote, an undo, a new answer, each with
    its time and its place among the annotator's vote events; the FIRE file is not affected."""
    st = Store(store_url)
    try:
        ids = campaign(st)  # a answered the gold item wrong ("irrelevant")
        a, g = ids["a"], GOLD_BASE + 1
        first, first_side = tmp_path / "first.json", tmp_path / "first.provenance.json"
        export_fire_json(st, first, provenance=first_side)
        st.history.change(a, g, "relevant")
        vote = st.next_item(a)
        assert vote is not None and vote.id < GOLD_BASE
        st.submit(a, vote.id, "relevant")  # a vote between the gold change and the undo
        assert st.undo(a) == vote.id and st.undo(a) == g  # newest first: the vote, then the gold answer
        st.submit(a, vote.id, "relevant")
        st.submit(a, g, "relevant")  # answered afresh, right this time
        out, side = tmp_path / "fire.json", tmp_path / "fire.provenance.json"
        export_fire_json(st, out, provenance=side)
        # the FIRE file: the gold answers reach none of it (byte for byte the same, apart from
        # the vote given again), and it stays valid for the authors' data model
        doc = json.loads(out.read_text())
        assert schema_errors(doc) == [] and schema_problems(doc) == []
        before = json.loads(first.read_text())
        assert {k: v for k, v in doc.items() if k != "annotations"} == {
            k: v for k, v in before.items() if k != "annotations"
        }
        new = [r for r in doc["annotations"] if r not in before["annotations"]]
        assert [(r["query"], r["label"]) for r in new] == [(vote.caption, "relevant")]
        assert "gold caption" not in out.read_text()
        prov = P.read_sidecar(side)
        assert prov["version"] == P.VERSION >= 3  # version 3 added the gold trail
        # every gold event, as the table has it
        rows = table(
            st,
            "SELECT id, gold_id, annotator_id, action, label, previous, after_event FROM gold_events ORDER BY id",
        )
        ev = prov["gold"]["events"]
        assert [
            (
                e["event_id"],
                e["gold_id"],
                e["annotator_id"],
                e["action"],
                e["label"],
                e["previous"],
                e["after_event"],
            )
            for e in ev
        ] == rows
        assert [(e["action"], e["label"], e["previous"]) for e in ev] == [
            ("shown", None, None),
            ("answer", "irrelevant", None),
            ("change", "relevant", "irrelevant"),
            ("withdraw", None, "relevant"),
            ("answer", "relevant", None),
        ]
        times = [datetime.fromisoformat(e["created_at"]) for e in ev]
        assert all(t.utcoffset() == timedelta(0) for t in times) and times == sorted(times)
        # after_event places the gold events among a's vote events: the vote came between the
        # change and the withdrawal
        mine = [e for e in prov["label_events"] if e["annotator_id"] == a]
        merged = [((e["event_id"], 0, 0), ("vote", e["item_id"], e["action"])) for e in mine]
        merged += [((e["after_event"], 1, e["event_id"]), ("gold", e["gold_id"], e["action"])) for e in ev]
        order = [x for _, x in sorted(merged)]
        tail = order[order.index(("gold", 1, "change")) :]
        assert tail == [
            ("gold", 1, "change"),
            ("vote", vote.id, "answer"),
            ("vote", vote.id, "withdraw"),
            ("gold", 1, "withdraw"),
            ("vote", vote.id, "answer"),
            ("gold", 1, "answer"),
        ]
        # the first answer is what accuracy scores; the current one is recorded beside it
        (ans,) = prov["gold"]["answers"]
        assert (ans["annotator_id"], ans["label"], ans["correct"], ans["current"]) == (
            a,
            "irrelevant",
            False,
            "relevant",
        )
        assert st.gold.accuracy()["a"]["correct"] == 0
        s = prov["summary"]
        assert (s["gold_answers"], s["gold_correct"], s["gold_changes"], s["gold_withdrawals"]) == (
            1,
            0,
            1,
            1,
        )
        assert prov["snapshot"]["last_gold_event_id"] == rows[-1][0]
        # the earlier sidecar recorded the state of its own time
        early = P.read_sidecar(first_side)
        assert [e["action"] for e in early["gold"]["events"]] == ["shown", "answer"]
        assert early["gold"]["answers"][0]["current"] == "irrelevant"
    finally:
        st.close()


def test_the_export_rereads_a_store_that_changed_meanwhile(tmp_path, monkeypatch) -> None:
    st = Store(f"sqlite:///{tmp_path / 's.db'}")
    try:
        st.add_items(
            [PoolItem(f"caption {i}", [f"c{i}"], f"v{i}", {"CLIP4CLIP": 1}) for i in range(3)], "MSRVTT"
        )
        a = st.add_annotator("a")[0]
        st.submit(a.id, st.next_item(a.id).id, "relevant")
        real = st.fire_records
        calls = []

        def racing(dataset=None):  # type: ignore[no-untyped-def]
            got = real(dataset)
            calls.append(1)
            if len(calls) == 1:  # another annotator answers right after the records were read
                st.submit(a.id, st.next_item(a.id).id, "irrelevant")
            return got

        monkeypatch.setattr(st, "fire_records", racing)
        out, side = tmp_path / "f.json", tmp_path / "p.json"
        export_fire_json(st, out, provenance=side)
        assert len(calls) == 2
        doc, prov = json.loads(out.read_text()), json.loads(side.read_text())
        assert len(doc["annotations"]) == 2 == sum(1 for i in prov["items"] if i["section"] == "annotations")

        def always(dataset=None):  # type: ignore[no-untyped-def]
            got = real(dataset)
            nxt = st.next_item(a.id)
            if nxt is not None:
                st.submit(a.id, nxt.id, "relevant")
            else:
                st.undo(a.id)
            return got

        monkeypatch.setattr(st, "fire_records", always)
        with pytest.raises(FirevalError, match="changed during each"):
            export_fire_json(st, tmp_path / "g.json", provenance=tmp_path / "q.json")
        assert not (tmp_path / "g.json").exists() and not (tmp_path / "q.json").exists()
    finally:
        st.close()


def test_cli_writes_the_sidecar_by_default_and_guards_its_path(tmp_path, capsys) -> None:
    db = f"sqlite:///{tmp_path / 's.db'}"
    st = Store(db)
    campaign(st)
    st.close()
    out = tmp_path / "labels.json"
    assert default_provenance_path(out) == tmp_path / "labels.provenance.json"
    assert cli(["judgments", "export", "--db", db, "-o", str(out)]) == 0
    assert "provenance: " in capsys.readouterr().out
    prov = P.read_sidecar(tmp_path / "labels.provenance.json")
    assert prov["fire_json"]["sha256"] == hashlib.sha256(out.read_bytes()).hexdigest()
    assert schema_errors(json.loads(out.read_text())) == []
    # --no-provenance: the FIRE file alone
    assert cli(["judgments", "export", "--db", db, "-o", str(tmp_path / "bare.json"), "--no-provenance"]) == 0
    assert (tmp_path / "bare.json").exists() and not (tmp_path / "bare.provenance.json").exists()
    # the sidecar may overwrite neither the output nor the store; nothing is written then
    for bad in (tmp_path / "x.json", tmp_path / "s.db"):
        before = bad.read_bytes() if bad.exists() else None
        code = cli(
            ["judgments", "export", "--db", db, "-o", str(tmp_path / "x.json"), "--provenance", str(bad)]
        )
        assert code == 2
        assert (bad.read_bytes() if bad.exists() else None) == before
    assert not (tmp_path / "x.json").exists()
    # a default sidecar path that is the store itself is refused too
    db2 = f"sqlite:///{tmp_path / 'y.provenance.json'}"
    Store(db2).close()
    assert cli(["judgments", "export", "--db", db2, "-o", str(tmp_path / "y.json")]) == 2
    assert not (tmp_path / "y.json").exists()
    code = cli(
        ["judgments", "export", "--db", db, "-o", str(out), "--provenance", "p.json", "--no-provenance"]
    )
    assert code == 2
    err = capsys.readouterr().err
    assert "--no-provenance" in err and "Traceback" not in err
