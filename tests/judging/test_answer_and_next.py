"""The answer path the web app takes: :meth:`Store.submit_in_session` and its event-loop twin
:meth:`Store.submit_in_session_async`, with ``claim_next`` (the answer and the next item).

On PostgreSQL both run one statement (``handout.PG_SUBMIT_FUNCTION``: one transaction, a claim
that skips held rows and falls back to the waiting claim); on SQLite the group writer. The
hand-out is checked against the two-step path (``submit`` then ``next_item``) on SQLite, which
shares no code with the PostgreSQL function, and under concurrency against the FIRE rules.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest
import sqlalchemy as sa
from test_store import items

from fireval.judging.handout import ItemView
from fireval.judging.store import (
    InvalidLabelError,
    LabelConflictError,
    NotAssignedError,
    Store,
    UnknownItemError,
    make_engine,
)

HOUR = timedelta(hours=1)


def answer(store: Store, sid: str, item_id: int, label: str, mode: str, claim_next: bool = True):
    """``submit_in_session`` (mode "threads") or ``submit_in_session_async`` on a fresh loop."""
    if mode == "threads":
        return store.submit_in_session(sid, item_id, label, 100, claim_next=claim_next)
    assert store.can_submit_async(item_id)
    return asyncio.run(store.submit_in_session_async(sid, item_id, label, 100, claim_next=claim_next))


def open_for(store: Store, annotator_id: int, up_to: int) -> int:
    """Items ``<= up_to`` with a slot left that the annotator has not been given (so could take)."""
    with store.engine.connect() as conn:
        return conn.execute(
            sa.text(
                "SELECT count(*) FROM items WHERE open_slots > 0 AND id <= :n "
                "AND id NOT IN (SELECT item_id FROM assignments WHERE annotator_id = :a)"
            ),
            {"a": annotator_id, "n": up_to},
        ).scalar_one()


def label_rows(store: Store) -> int:
    with store.engine.connect() as conn:
        return conn.execute(sa.text("SELECT count(*) FROM labels")).scalar_one()


def scripted_label(uid: int, item_id: int) -> str:
    h = (uid * 7919 + item_id * 104729) % 11
    return "skip" if h == 0 else ("relevant" if (uid + item_id) % 2 else "irrelevant")


def test_same_hand_out_as_the_two_step_path(store: Store, tmp_path: Path) -> None:
    """Round robin over 4 annotators with ties and skips: the items handed out with the answer
    are the ones ``submit`` + ``next_item`` hand out on SQLite, answer for answer."""
    ref = Store(f"sqlite:///{tmp_path / 'ref.db'}")
    try:
        pool = items(14, double={0, 3, 4, 7, 9, 12})
        for st in (store, ref):
            st.add_items(pool, "T")
        users = [store.add_annotator(f"u{k}")[0].id for k in range(4)]
        ref_users = [ref.add_annotator(f"u{k}")[0].id for k in range(4)]
        sids = [store.open_session(u, HOUR) for u in users]
        cur = {u: store.next_item(u) for u in users}
        ref_cur = {u: ref.next_item(u) for u in ref_users}
        got, want = [], []
        for step in range(60):
            k = step % 4
            u, ru = users[k], ref_users[k]
            if cur[u] is None:
                assert ref_cur[ru] is None
                continue
            lab = scripted_label(k, cur[u].id)
            res = answer(store, sids[k], cur[u].id, lab, "threads" if step % 2 else "loop")
            ref.submit(ru, ref_cur[ru].id, lab)
            nxt = ref.next_item(ru)
            got.append((k, cur[u].id, res.status, res.next and res.next.id))
            want.append((k, ref_cur[ru].id, "created", nxt and nxt.id))
            cur[u], ref_cur[ru] = res.next, nxt
        assert got == want
        assert len(got) > 20 and any(g[3] is None for g in got)  # the queue ran dry for some
        assert store.votes()["label"].tolist() == ref.votes()["label"].tolist()
        cols = "SELECT id, needed, open_slots FROM items ORDER BY id"
        with store.engine.connect() as a, ref.engine.connect() as b:
            assert a.execute(sa.text(cols)).all() == b.execute(sa.text(cols)).all()
    finally:
        ref.close()


@pytest.mark.parametrize("mode", ["threads", "loop"])
def test_refusals_write_nothing(store: Store, mode: str) -> None:
    store.add_items(items(3), "T")
    a, _ = store.add_annotator("a")
    b, _ = store.add_annotator("b")
    sa_, sb = store.open_session(a.id, HOUR), store.open_session(b.id, HOUR)
    first = store.next_item(a.id)
    assert first.id == 1
    with pytest.raises(InvalidLabelError):
        answer(store, sa_, 1, "maybe", mode)
    for bad in (99, 0, -1, 2**31, 2**40):
        with pytest.raises(UnknownItemError):
            answer(store, sa_, bad, "relevant", mode)
    with pytest.raises(NotAssignedError):
        answer(store, sb, 1, "relevant", mode)  # b was never given item 1
    assert answer(store, "no such session", 1, "relevant", mode) is None
    assert answer(store, "", 1, "relevant", mode) is None
    assert answer(store, "x" * 600, 1, "relevant", mode) is None
    assert label_rows(store) == 0
    res = answer(store, sa_, 1, "relevant", mode)
    assert (res.status, res.item_id, res.next.id) == ("created", 1, 2)
    again = answer(store, sa_, 1, "relevant", mode)  # a resubmission: same row, same next item
    assert (again.status, again.label_id, again.next.id) == ("duplicate", res.label_id, 2)
    assert again.next.assignment_id == res.next.assignment_id
    with pytest.raises(LabelConflictError, match="already labelled 'relevant'"):
        answer(store, sa_, 1, "irrelevant", mode)
    assert label_rows(store) == 1
    store.revoke_sessions(a.id)  # the session is checked inside the answer's transaction
    assert answer(store, sa_, 2, "relevant", mode) is None
    assert label_rows(store) == 1
    sa2 = store.open_session(a.id, HOUR)
    res = answer(store, sa2, 2, "skip", mode, claim_next=False)
    assert (res.status, res.next) == ("created", None)
    assert store.votes()["label"].tolist() == ["relevant", "skip"]


@pytest.mark.parametrize("mode", ["threads", "loop"])
def test_a_held_item_is_waited_for_before_nothing_left(store: Store, store_url: str, mode: str) -> None:
    """The only item a's next claim could take is held by another transaction: the answer's
    claim skips it, and the waiting claim gets it once it is free ("nothing left" is never
    answered while it is held)."""
    store.add_items(items(2, double={1}), "T")  # item 1 single, item 2 double
    a, _ = store.add_annotator("a")
    b, _ = store.add_annotator("b")
    sid = store.open_session(a.id, HOUR)
    assert store.next_item(a.id).id == 1
    assert store.next_item(b.id).id == 2  # one slot of item 2 left: only a can take it
    holder = make_engine(store_url)
    got: dict[str, object] = {}
    with holder.connect() as conn:
        tx = conn.begin()
        conn.execute(sa.text("UPDATE items SET open_slots = open_slots WHERE id = 2"))
        th = threading.Thread(target=lambda: got.setdefault("res", answer(store, sid, 1, "relevant", mode)))
        th.start()
        if store.is_postgres:  # until the waiting claim is blocked (bounded), or has answered
            for _ in range(600):
                with holder.connect() as c2:
                    waiting = c2.execute(
                        sa.text(
                            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                            "AND wait_event_type = 'Lock'"
                        )
                    ).scalar_one()
                if not th.is_alive() or waiting:
                    break
                time.sleep(0.05)
        tx.commit()
    th.join(60)
    holder.dispose()
    res = got["res"]
    assert res.status == "created" and res.next is not None and res.next.id == 2


def test_a_free_item_comes_with_the_answer_in_one_statement(store: Store, monkeypatch) -> None:
    """PostgreSQL: when an item is free the answer's own statement claims it (no second
    transaction); SQLite: the same transaction of the group writer."""
    store.add_items(items(4), "T")
    a, _ = store.add_annotator("a")
    sid = store.open_session(a.id, HOUR)
    it = store.next_item(a.id)

    def no_second_claim(*_args: object) -> None:
        raise AssertionError("a second transaction claimed the next item")

    monkeypatch.setattr(store.handout, "next_item", no_second_claim)
    for mode in ("threads", "loop", "threads"):
        res = answer(store, sid, it.id, "relevant", mode)
        assert res.next is not None and res.next.id == it.id + 1
        it = res.next
    if store.is_postgres:  # a temporary function of the store's own connections: no schema change
        probe = "SELECT to_regproc('pg_temp.fireval_submit')"
        with store.engine.connect() as conn:
            assert conn.execute(sa.text(probe)).scalar() is not None
        other = sa.create_engine(store.url)
        try:
            with other.connect() as conn:
                assert conn.execute(sa.text(probe)).scalar() is None
        finally:
            other.dispose()


@pytest.mark.parametrize("mode", ["threads", "loop"])
def test_concurrent_answers_with_next(store: Store, mode: str) -> None:
    """8 annotators start together, each taking the next item from the answer, until "nothing
    left". The first half of the items only get "relevant" (no slot ever comes back), so when an
    annotator is told "nothing left" none of those may have a slot they could take (the race of
    issue 11: a held item skipped). The second half gets ties and skips; after a last sequential
    sweep, no item has a vote too many, an unfinished item was seen by everyone, nobody answered
    an item twice, and every item's ``needed``/``open_slots`` are what a recount gives."""
    n_items, n_users = 40, 8
    half = n_items // 2
    store.add_items(items(n_items, double=set(range(0, n_items, 3))), "T")
    users = [store.add_annotator(f"u{i}")[0].id for i in range(n_users)]
    sids = {u: store.open_session(u, HOUR) for u in users}
    errors: list[BaseException] = []
    wrong_none: list[tuple[int, int]] = []

    def lab(uid: int, it: ItemView) -> str:
        """First half: "relevant". Second half: some skips, else "relevant" from the item's
        first claimer and "irrelevant" from later ones (a double item's two votes tie)."""
        if it.id <= half:
            return "relevant"
        if (uid * 7919 + it.id * 104729) % 11 == 0:
            return "skip"
        with store.read_engine.connect() as conn:
            earlier = conn.execute(
                sa.text("SELECT count(*) FROM assignments WHERE item_id = :i AND id < :a"),
                {"i": it.id, "a": it.assignment_id},
            ).scalar_one()
        return "irrelevant" if earlier else "relevant"

    def told_nothing_left(uid: int) -> None:
        if (left := open_for(store, uid, half)) != 0:
            wrong_none.append((uid, left))

    if mode == "threads":
        start = threading.Barrier(n_users)

        def work(uid: int) -> None:
            try:
                start.wait(30)
                it = store.next_item(uid)
                while it is not None:
                    res = store.submit_in_session(sids[uid], it.id, lab(uid, it), claim_next=True)
                    it = res.next
                told_nothing_left(uid)
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(u,)) for u in users]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert not any(t.is_alive() for t in threads)
    else:

        async def work_async(uid: int) -> None:
            it = await asyncio.get_running_loop().run_in_executor(None, store.next_item, uid)
            while it is not None:
                assert store.can_submit_async(it.id)
                res = await store.submit_in_session_async(sids[uid], it.id, lab(uid, it), claim_next=True)
                it = res.next
            told_nothing_left(uid)

        async def all_of_them() -> None:
            for r in await asyncio.gather(*(work_async(u) for u in users), return_exceptions=True):
                if isinstance(r, BaseException):
                    errors.append(r)

        asyncio.run(all_of_them())
    assert not errors, errors
    assert wrong_none == []
    # a tie answered after some annotators stopped needs one of them: a last sequential sweep
    busy = True
    while busy:
        busy = False
        for u in users:
            it = store.next_item(u)
            while it is not None:
                busy = True
                it = store.submit_in_session(sids[u], it.id, lab(u, it), claim_next=True).next
    v = store.votes()
    pairs = set(zip(v["item_id"].tolist(), v["annotator_id"].tolist()))
    assert len(pairs) == v["item_id"].size  # nobody labelled an item twice
    with store.engine.connect() as conn:
        seen_by = dict(
            conn.execute(sa.text("SELECT item_id, count(*) FROM assignments GROUP BY item_id")).all()
        )
        open_asg = conn.execute(sa.text("SELECT count(*) FROM assignments WHERE NOT done")).scalar_one()
        slots = {
            r[0]: (r[1], r[2]) for r in conn.execute(sa.text("SELECT id, needed, open_slots FROM items"))
        }
    assert open_asg == 0
    order = np.argsort(v["label_id"], kind="stable")
    ties = 0
    for item in range(1, n_items + 1):
        votes = [str(x) for i, x in zip(v["item_id"][order], v["label"][order]) if i == item and x != "skip"]
        base = 2 if (item - 1) % 3 == 0 else 1
        n, r = len(votes), votes.count("relevant")
        needed = n + 1 if n >= 2 and 2 * r == n else base
        ties += n >= 2 and votes[:2].count("relevant") == 1  # a tie-breaker was needed
        assert n <= base + (n >= 2 and votes[:2].count("relevant") == 1), (item, votes)
        assert slots[item] == (needed, max(0, needed - n)), (item, votes, slots[item])
        if n < needed:  # unfinished only when nobody is left who has not seen it
            assert seen_by.get(item, 0) == n_users, (item, votes)
        if item <= half:  # all relevant: exactly the FIRE votes
            assert n == base, (item, votes)
    assert ties > 0  # the scenario exercised tie-breakers


def test_web_answers_on_postgres_as_on_sqlite(store_url: str, tmp_path: Path) -> None:
    """``POST /api/labels`` through the app's fast path on PostgreSQL (the one statement on a
    connection the event loop drives) answers as the full stack does on SQLite: same status and
    body for every request, accepted or refused."""
    import re

    from fastapi.testclient import TestClient

    from fireval.web.app import WebConfig, create_app

    if not store_url.startswith("postgresql"):
        pytest.skip("the PostgreSQL fast path against the SQLite full stack")
    apps, tokens = [], []
    for url in (store_url, f"sqlite:///{tmp_path / 'ref.db'}"):
        st = Store(url)
        st.add_items(items(12, double={1}), "T")
        tokens.append(st.add_annotator("ann")[1])
        st.close()
        apps.append(create_app(WebConfig(db_url=url, dataset="T", secret_key="k" * 43)))
    apps[1].fast_label = None
    assert apps[0].fast_label is not None and apps[0].state.store.db.can_fetch_async

    def login(c: TestClient, token: str) -> str:
        page = c.get("/login").text
        csrf = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)
        assert (
            c.post("/login", data={"token": token, "csrf_token": csrf}, follow_redirects=False).status_code
            == 303
        )
        return c.get("/api/session").json()["csrf_token"]

    with TestClient(apps[0]) as a, TestClient(apps[1]) as b:
        clients = ((a, login(a, tokens[0])), (b, login(b, tokens[1])))
        # the item each client is shown, as the page names it (an id, or an opaque handle)
        shown = {id(c): c.get("/api/next").json()["item"]["id"] for c, _ in clients}

        def both(**fields: object) -> tuple[int, object]:
            """The same answer from both clients, each about the item it is shown; the answers
            must be equal once each client's item names are replaced by a placeholder."""
            out = []
            for c, csrf in clients:
                body = {"item_id": shown[id(c)], **fields}
                r = c.post("/api/labels", json=body, headers={"X-CSRF-Token": csrf})
                text = r.text.replace(json.dumps(shown[id(c)]), '"<item>"').replace(
                    str(shown[id(c)]), "<item>"
                )
                data = json.loads(text)
                if r.status_code == 200:
                    data = {"status": data["status"], "next": data.get("next") is not None}
                out.append((r.status_code, data))
                if r.status_code == 200 and fields.get("next") and r.json()["next"] is not None:
                    shown[id(c)] = r.json()["next"]["id"]
            assert out[0] == out[1], out
            return out[0]

        assert both(label="maybe")[0] == 422
        for _ in range(5):
            assert both(label="irrelevant", time_spent_ms=5) == (200, {"status": "created", "next": False})
            assert both(label="irrelevant") == (200, {"status": "duplicate", "next": False})
            assert both(label="relevant")[0] == 409
            assert both(label="irrelevant", next=True) == (200, {"status": "duplicate", "next": True})
        for _ in range(3):  # an answer that hands out the next item in the same request
            assert both(label="relevant", next=True) == (200, {"status": "created", "next": True})
        for c, _ in clients:
            c.app.state.store.revoke_sessions("ann")
        assert both(label="relevant")[0] == 401


def test_driver_errors_of_the_event_loop_path_are_translated() -> None:
    """Statements run on the driver directly raise its own exceptions: a unique-key race is
    still a conflict (409), any other driver error 503."""
    import psycopg2

    from fireval.judging.engine import translate
    from fireval.judging.errors import StoreUnavailableError

    url = "postgresql+psycopg2://u@h/db"
    assert isinstance(
        translate(psycopg2.IntegrityError("dup"), url, psycopg2.IntegrityError), LabelConflictError
    )
    assert isinstance(
        translate(psycopg2.OperationalError("gone"), url, psycopg2.IntegrityError), StoreUnavailableError
    )
    assert isinstance(
        translate(psycopg2.IntegrityError("dup"), url), StoreUnavailableError
    )  # not known as one


def test_an_unreachable_server_is_503_on_the_event_loop_path(store: Store, monkeypatch) -> None:
    """PostgreSQL: when the event loop's connection cannot be made, the answer fails with
    ``StoreUnavailableError`` (the web app's 503) and nothing is written; the next call with the
    server back works."""
    from fireval.judging.errors import StoreUnavailableError

    if not store.db.can_fetch_async:
        pytest.skip("PostgreSQL's event-loop path")
    store.add_items(items(2), "T")
    a, _ = store.add_annotator("a")
    sid = store.open_session(a.id, HOUR)
    it = store.next_item(a.id)
    good = store.engine.url
    monkeypatch.setattr(store.engine, "url", good.set(port=1))  # nothing listens there
    with pytest.raises(StoreUnavailableError):
        answer(store, sid, it.id, "relevant", "loop")
    assert label_rows(store) == 0
    monkeypatch.setattr(store.engine, "url", good)
    assert answer(store, sid, it.id, "relevant", "loop").status == "created"
