"""Revision 0007: the audit table records each event's label kind (both backends).

A 0006 store with a history (changes, withdrawals, a reused label id) is upgraded; every
existing event gets the kind the migration's rules can know (the expectations below are
written from those rules, event by event), events written afterwards by every code path carry
the kind of their label, and the export's sidecar lists the recorded kind, not the current
label's. Downgrade restores 0005's triggers.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
import sqlalchemy as sa

from fireval.judging import provenance as P
from fireval.judging.engine import MIGRATIONS, current_revision, make_engine, migrate
from fireval.judging.export import export_fire_json
from fireval.judging.pool import PoolItem
from fireval.judging.schema import SCHEMA_HEAD
from fireval.judging.store import Store

# (id, name, role): 1, 2 annotators, 9 an admin
PEOPLE = [(1, "a", "annotator"), (2, "b", "annotator"), (9, "boss", "admin")]

# The history of a 0006 store, in order: ("add", label id, item, annotator, label, kind),
# ("change", label id, new label), ("del", label id). Each step writes one audit event through
# 0006's triggers (which record no kind); EXPECTED is the kind 0007 must give each event.
HISTORY: list[tuple] = [
    ("add", 1, 1, 1, "relevant", "vote"),  # item 1: a tie of a and b ...
    ("add", 2, 1, 2, "irrelevant", "vote"),
    ("add", 3, 1, 9, "relevant", "adjudication"),  # ... the admin decides it
    ("add", 4, 2, 9, "relevant", "vote"),  # an admin's vote
    ("add", 5, 3, 1, "relevant", "vote"),
    ("change", 5, "irrelevant"),  # a changes the answer
    ("add", 6, 4, 9, "irrelevant", "adjudication"),  # an admin's adjudication, withdrawn
    ("del", 6),
    ("add", 7, 5, 2, "relevant", "vote"),  # b's vote, withdrawn
    ("del", 7),
    ("add", 8, 6, 9, "relevant", "adjudication"),  # label id 8: an adjudication, withdrawn, and
    ("del", 8),
    ("add", 8, 7, 1, "irrelevant", "vote"),  # the id reused by another annotator's vote (SQLite)
    ("add", 10, 8, 9, "relevant", "adjudication"),  # id 10: the admin withdraws an adjudication
    ("del", 10),
    ("add", 10, 8, 9, "irrelevant", "vote"),  # and votes on the same item under the same id
]
EXPECTED = [
    "vote",
    "vote",
    "adjudication",  # rule 1: the same row, never withdrawn
    "vote",
    "vote",
    "vote",  # the change of a row that still exists
    None,
    None,  # rule 3: an admin's row that is gone: not known
    "vote",
    "vote",  # rule 2: an annotator's row that is gone
    None,
    None,  # id 8's first row, an admin's, withdrawn: not known (the id now holds a's vote)
    "vote",
    None,
    None,  # id 10's first row: withdrawn later, so the current row (same item, annotator) is not it
    "vote",
]


def build_0006(url: str) -> None:
    eng = make_engine(url)
    assert migrate(eng, "0006") == "0006"
    with eng.begin() as conn:
        x = lambda sql, **kw: conn.execute(sa.text(sql), kw)  # noqa: E731
        for aid, name, role in PEOPLE:
            x(
                "INSERT INTO annotators (id, name, token_hash, role, active, created_at) "
                "VALUES (:id, :n, :h, :r, :t, CURRENT_TIMESTAMP)",
                id=aid,
                n=name,
                h=f"h{aid}",
                r=role,
                t=True,
            )
        for item in range(1, 9):
            x(
                "INSERT INTO items (id, dataset, caption, norm_caption, caption_ids, video_id, runs, "
                "models, is_double, needed, open_slots, created_at) VALUES (:i, 'T', :c, :c, '[]', :v, "
                "'{}', '[]', :f, 2, 0, CURRENT_TIMESTAMP)",
                i=item,
                c=f"caption {item}",
                v=f"v{item}",
                f=False,
            )
        assignments: dict[tuple[int, int], int] = {}
        for step in HISTORY:
            if step[0] == "add":
                _, lid, item, aid, label, kind = step
                if (item, aid) not in assignments:
                    assignments[item, aid] = assignment = len(assignments) + 1
                    x(
                        "INSERT INTO assignments (id, item_id, annotator_id, done, created_at, updated_at) "
                        "VALUES (:id, :i, :a, :t, CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)",
                        id=assignment,
                        i=item,
                        a=aid,
                        t=True,
                    )
                x(
                    "INSERT INTO labels (id, item_id, annotator_id, assignment_id, label, created_at, kind) "
                    "VALUES (:id, :i, :a, :s, :l, CURRENT_TIMESTAMP, :k)",
                    id=lid,
                    i=item,
                    a=aid,
                    s=assignments[item, aid],
                    l=label,
                    k=kind,
                )
            elif step[0] == "change":
                x("UPDATE labels SET label = :l WHERE id = :id", id=step[1], l=step[2])
            else:
                x("DELETE FROM labels WHERE id = :id", id=step[1])
    eng.dispose()


def event_kinds(eng: sa.Engine) -> list:
    with eng.connect() as conn:
        return [r[0] for r in conn.execute(sa.text("SELECT kind FROM label_events ORDER BY id"))]


def columns(eng: sa.Engine, table: str) -> set[str]:
    return {c["name"] for c in sa.inspect(eng).get_columns(table)}


def downgrade(url: str, target: str) -> None:
    from alembic import command
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    eng = make_engine(url)
    with eng.begin() as conn:
        cfg.attributes["connection"] = conn
        command.downgrade(cfg, target)
    eng.dispose()


def test_upgrade_from_0006_fills_the_kind_of_existing_events(store_url: str, tmp_path) -> None:
    build_0006(store_url)
    eng = make_engine(store_url)
    assert "kind" not in columns(eng, "label_events")
    assert len(event_kinds_0006 := _count(eng)) == len(HISTORY) == len(EXPECTED) and event_kinds_0006
    assert migrate(eng, "0007") == "0007" and SCHEMA_HEAD >= "0007"
    assert event_kinds(eng) == EXPECTED
    # from now on the triggers record the kind: insert, change and withdraw of an adjudication
    with eng.begin() as conn:
        conn.execute(
            sa.text(
                "INSERT INTO labels (id, item_id, annotator_id, assignment_id, label, created_at, kind) "
                "VALUES (50, 2, 1, 1, 'relevant', CURRENT_TIMESTAMP, 'adjudication')"
            )
        )
        conn.execute(sa.text("UPDATE labels SET label = 'irrelevant' WHERE id = 50"))
        conn.execute(sa.text("DELETE FROM labels WHERE id = 50"))
        conn.execute(sa.text("UPDATE labels SET label = 'relevant' WHERE id = 8"))  # a's vote
    assert event_kinds(eng)[len(EXPECTED) :] == ["adjudication"] * 3 + ["vote"]
    with pytest.raises(sa.exc.IntegrityError), eng.begin() as conn:  # the check constraint
        conn.execute(sa.text("UPDATE label_events SET kind = 'expert' WHERE id = 1"))
    eng.dispose()
    # the export's sidecar lists the recorded kinds (a join on the current labels could not:
    # ids 6, 7 and 10's first row are gone, id 8 now holds another annotator's vote)
    st = Store(store_url)
    try:
        out, side = tmp_path / "f.json", tmp_path / "f.provenance.json"
        export_fire_json(st, out, extended=True, provenance=side)
        prov = P.read_sidecar(side)
        assert [e["kind"] for e in prov["label_events"]] == event_kinds(st.engine)
        assert [e["kind"] for e in prov["label_events"]][: len(EXPECTED)] == EXPECTED
        assert prov["version"] == P.VERSION >= 2  # version 2 added the kinds
    finally:
        st.close()


def _count(eng: sa.Engine) -> list:
    with eng.connect() as conn:
        return list(conn.execute(sa.text("SELECT id FROM label_events ORDER BY id")))


def test_downgrade_to_0006_and_upgrade_again(store_url: str) -> None:
    build_0006(store_url)
    Store(store_url).close()  # upgrades to the head
    downgrade(store_url, "0006")
    eng = make_engine(store_url)
    try:
        assert current_revision(eng) == "0006"
        assert "kind" not in columns(eng, "label_events") and "kind" in columns(eng, "labels")
        with eng.begin() as conn:  # 0005's triggers are back and work without the column
            conn.execute(sa.text("UPDATE labels SET label = 'relevant' WHERE id = 2"))
            conn.execute(sa.text("DELETE FROM labels WHERE id = 3"))  # the admin's adjudication
        n = len(_count(eng))
        assert n == len(HISTORY) + 2
    finally:
        eng.dispose()
    downgrade(store_url, "0005")  # 0006's own downgrade still runs after 0007's
    eng = make_engine(store_url)
    try:
        assert current_revision(eng) == "0005" and "kind" not in columns(eng, "labels")
    finally:
        eng.dispose()
    st = Store(store_url)  # and up again to the head: 0006 re-marks, 0007 refills
    try:
        assert st.revision == SCHEMA_HEAD
        kinds = event_kinds(st.engine)
        # the two events written at 0006: item 1's change (b's row, a vote) and the withdrawal of
        # the admin's adjudication (row gone: not known); 0006's rule now finds no adjudication on
        # item 1 (b's change broke the tie), so EXPECTED's adjudication answer is not known either
        assert kinds[-2:] == ["vote", None]
        assert kinds[2] is None
        assert "adjudication" not in kinds  # every adjudication row is gone or re-marked a vote
    finally:
        st.close()


def _web_helpers():
    path = Path(__file__).parents[1] / "web" / "helpers.py"
    spec = importlib.util.spec_from_file_location("web_helpers_for_judging", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_every_write_path_records_the_kind(store_url: str, tmp_path) -> None:
    """The store's paths (the plain-SQL answer, adjudication, flag resolution, change, undo) and
    the web's (the fast ``POST /api/labels`` path, the full stack, ``/admin/adjudicate``)."""
    st = Store(store_url)
    try:
        st.add_items([PoolItem(f"caption {i}", [f"c{i}"], f"v{i}", {"A": 1}, i < 3) for i in range(8)], "T")
        a, b = (st.add_annotator(n)[0] for n in ("a", "b"))
        boss = st.add_annotator("boss", "admin")[0]
        tie = st.next_item(a.id).id
        st.submit(a.id, tie, "relevant")
        assert st.next_item(b.id).id == tie
        st.submit(b.id, tie, "irrelevant")
        st.adjudicate(boss.id, tie, "relevant")
        st.undo(boss.id, tie)  # the admin withdraws the adjudication ...
        st.adjudicate(boss.id, tie, "irrelevant")  # ... and gives another
        st.history.change(boss.id, tie, "relevant")  # then changes it
        other = st.next_item(a.id).id
        st.flags.flag(a.id, other, "unsure")
        st.flags.resolve_flagged(boss.id, other, "irrelevant")
        got = [(e["annotator_id"], e["action"], e["kind"]) for e in st.history.events()]
        assert got == [
            (a.id, "answer", "vote"),
            (b.id, "answer", "vote"),
            (boss.id, "answer", "adjudication"),
            (boss.id, "withdraw", "adjudication"),
            (boss.id, "answer", "adjudication"),
            (boss.id, "change", "adjudication"),
            (a.id, "answer", "vote"),  # the flag's skip
            (boss.id, "answer", "adjudication"),  # the flag's resolution
        ]
        n_store = len(got)
    finally:
        st.close()
    from fastapi.testclient import TestClient

    from fireval.web.app import WebConfig, create_app

    h = _web_helpers()
    st = Store(store_url)
    tokens = {n: st.add_annotator(n, role)[1] for n, role in (("c", "annotator"), ("boss2", "admin"))}
    st.close()
    app = create_app(WebConfig(db_url=store_url, dataset="T", secret_key="k" * 43))
    assert app.fast_label is not None
    with TestClient(app) as c:
        csrf = h.login(c, tokens["c"])
        for fast in (True, False):
            item = c.get("/api/next").json()["item"]["id"]
            app.fast_label = app.fast_label if fast else None
            r = c.post(
                "/api/labels", json={"item_id": item, "label": "relevant"}, headers={"X-CSRF-Token": csrf}
            )
            assert r.status_code == 200, r.text
        r = c.post("/api/undo", json={"item_id": item}, headers={"X-CSRF-Token": csrf})
        assert r.status_code == 200, r.text
        item_id = h.raw_id(c, item)  # the page shows a handle; admin pages take the store's id
    with TestClient(create_app(WebConfig(db_url=store_url, dataset="T", secret_key="k" * 43))) as c:
        csrf = h.login(c, tokens["boss2"])
        r = c.post(
            "/admin/adjudicate",
            data={"item_id": str(item_id), "label": "irrelevant", "csrf_token": csrf},
            follow_redirects=False,
        )
        assert r.status_code == 303, r.text
    st = Store(store_url)
    try:
        got = [(e["action"], e["kind"]) for e in st.history.events()][n_store:]
        assert got == [
            ("answer", "vote"),
            ("answer", "vote"),
            ("withdraw", "vote"),
            ("answer", "adjudication"),
        ]
        assert None not in {e["kind"] for e in st.history.events()}
    finally:
        st.close()


def test_the_sidecar_keeps_the_kind_of_a_withdrawn_adjudication(tmp_path) -> None:
    """On SQLite a withdrawn label's id is reused by the next label: the event of the admin's
    withdrawn adjudication must not take the kind of the vote that now holds its id."""
    st = Store(f"sqlite:///{tmp_path / 's.db'}")
    try:
        st.add_items(
            [PoolItem(f"caption {i}", [f"c{i}"], f"v{i}", {"CLIP4CLIP": 1}, i == 0) for i in range(3)],
            "MSRVTT",
        )
        a, b = (st.add_annotator(n)[0] for n in ("a", "b"))
        boss = st.add_annotator("boss", "admin")[0]
        tie = st.next_item(a.id).id
        st.submit(a.id, tie, "relevant")
        st.submit(b.id, st.next_item(b.id).id, "irrelevant")
        res = st.adjudicate(boss.id, tie, "relevant")
        st.undo(boss.id, tie)
        st.submit(a.id, st.next_item(a.id).id, "irrelevant")  # the freed id goes to a's vote
        side = tmp_path / "p.json"
        export_fire_json(st, tmp_path / "f.json", provenance=side)
        prov = json.loads(side.read_text())
        events = [(e["label_id"], e["annotator_id"], e["action"], e["kind"]) for e in prov["label_events"]]
        reused = [e for e in events if e[0] == res.label_id]
        assert reused == [
            (res.label_id, boss.id, "answer", "adjudication"),
            (res.label_id, boss.id, "withdraw", "adjudication"),
            (res.label_id, a.id, "answer", "vote"),
        ]
    finally:
        st.close()
