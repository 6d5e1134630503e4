"""PostgreSQL: the prefetch's one-statement peek (``Store.peek_next_async``, ``GET /api/peek``
on the event loop) answers what ``Store.peek_next`` answers, in every state a random session of
three annotators reaches (double items, ties, skips, undo, lease expiry), writes nothing, and
refuses a session that is not live.

The oracles: ``Store.peek_next`` (tested against the hand-out in tests/web/test_annotate_prefetch.py)
and, right before an answer, the item the hand-out then actually gives.
"""

from __future__ import annotations

import asyncio
import random
from datetime import timedelta

import pytest
import sqlalchemy as sa

from fireval.judging import schema as S
from fireval.judging.pool import PoolItem
from fireval.judging.store import Store

pytestmark = pytest.mark.postgres


@pytest.fixture
def pg_store(store_url: str):
    if not store_url.startswith("postgresql"):
        pytest.skip("the one-statement peek is PostgreSQL's")
    st = Store(store_url)
    yield st
    st.close()


def _rows(st: Store) -> list:
    with st.db.reading() as conn:
        return [
            sorted(tuple(r) for r in conn.execute(sa.select(t))) for t in (S.items, S.assignments, S.labels)
        ]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_one_statement_peek_equals_peek_next(pg_store: Store, seed: int) -> None:
    st = pg_store
    rng = random.Random(seed)
    st.add_items(
        [PoolItem(f"caption {k}", [f"c{k}"], f"v{k}", {"A": 1}, double=k % 3 == 0) for k in range(16)], "T"
    )
    st.gold.rate = 0.0
    people = [st.add_annotator(f"a{k}")[0].id for k in range(3)]
    sids = {a: st.open_session(a, timedelta(hours=1)) for a in people}
    assert st.can_peek_async()

    async def session() -> tuple[int, int]:
        compared = predicted = 0
        for _ in range(70):
            a = rng.choice(people)
            r = rng.random()
            if r < 0.08:
                st.undo(a)
                continue
            if r < 0.11:
                st.release_stale(timedelta(0))
                continue
            for who in people:  # every annotator's peek, in whatever state they are
                before = _rows(st)
                live, video = await st.peek_next_async(sids[who])
                expected = st.peek_next(who)
                assert live and video == (expected.video_id if expected else None)
                assert _rows(st) == before  # read only
                compared += 1
            cur = st.next_item(a)
            if cur is None:
                continue
            _, video = await st.peek_next_async(sids[a])
            label = rng.choice(["relevant", "irrelevant", "relevant", "irrelevant", "skip"])
            res = st.submit(a, cur.id, label, claim_next=True)
            if video is not None and res.next is not None:
                # nobody else moved in between: the prediction is what the hand-out gave
                assert res.next.video_id == video
                predicted += 1
        return compared, predicted

    compared, predicted = asyncio.run(session())
    assert compared > 100 and predicted > 10


def test_one_statement_peek_refuses_a_session_that_is_not_live(pg_store: Store) -> None:
    st = pg_store
    st.add_items([PoolItem("caption", ["c"], "v", {"A": 1})], "T")
    a, _ = st.add_annotator("a")
    sid = st.open_session(a.id, timedelta(hours=1))
    st.next_item(a.id)

    async def peek(s: str) -> tuple[bool, str | None]:
        return await st.peek_next_async(s)

    assert asyncio.run(peek(sid)) == (True, None)  # shown the only item: nothing follows
    assert asyncio.run(peek("not-a-session")) == (False, None)
    assert asyncio.run(peek("")) == (False, None)
    assert asyncio.run(peek("x" * 10_000)) == (False, None)
    st.end_session(sid)
    assert asyncio.run(peek(sid)) == (False, None)


def test_the_page_prefetch_uses_the_one_statement_peek(pg_store: Store) -> None:
    """``GET /api/peek`` on PostgreSQL without gold answers through the one-statement peek (the
    thread-pool path is made to fail here) with what ``peek_next`` says, and 401 for a session
    that has ended."""
    import re

    from fastapi.testclient import TestClient

    from fireval.web.app import WebConfig, create_app

    st = pg_store
    st.add_items([PoolItem(f"caption {k}", [f"c{k}"], f"v{k}", {"A": 1}) for k in range(3)], "T")
    ann, token = st.add_annotator("ann")
    app = create_app(WebConfig(db_url=st.url, dataset="T", video_url_template="/media/{video_id}.mp4"))
    with TestClient(app) as c:
        page = c.get("/login").text
        csrf = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)  # type: ignore[union-attr]
        c.post("/login", data={"token": token, "csrf_token": csrf}, follow_redirects=False)
        assert c.get("/api/next").json()["item"] is not None
        expected = st.peek_next(ann.id)
        assert expected is not None

        def no_thread_path(_aid: int) -> None:
            raise AssertionError("the peek went through the thread pool")

        app.state.store.peek_next = no_thread_path
        r = c.get("/api/peek")
        assert r.status_code == 200 and r.json() == {"video_url": f"/media/{expected.video_id}.mp4"}
        st.revoke_sessions(ann.id)
        assert c.get("/api/peek").status_code == 401
