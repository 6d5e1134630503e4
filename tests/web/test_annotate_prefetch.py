"""Prefetch of the next item's video (``GET /api/peek``, ``Store.peek_next``): semantics with
several annotators, leases, gold items and the end of the queue, on SQLite and PostgreSQL.

The oracle is the hand-out itself: right before an annotator answers, the peek must name the
item that :meth:`Store.next_item` then actually gives them; and the peek must change nothing
(every row of the queue tables is compared before and after).
"""

from __future__ import annotations

import random
from datetime import timedelta

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient
from helpers import csrf_from, handle, login, raw_id, video_shown, video_token_url
from test_annotation_ux import SECRET_RUN, db_url, post_json  # noqa: F401  (fixture)

from fireval.judging import schema as S
from fireval.judging.engine import now
from fireval.judging.gold import GOLD_BASE, GoldPair
from fireval.judging.pool import PoolItem
from fireval.judging.store import Store
from fireval.web.app import WebConfig, _without_cookie, create_app

GOLD = [GoldPair(f"gold caption {k}", f"g{k}", "relevant" if k % 2 else "irrelevant") for k in range(4)]


def _pool(n: int, double_every: int = 0) -> list[PoolItem]:
    return [
        PoolItem(
            f"caption {k}",
            [f"c{k}"],
            f"v{k}",
            {SECRET_RUN: k},
            double=bool(double_every and k % double_every == 0),
        )
        for k in range(n)
    ]


def _snapshot(st: Store) -> dict[str, list[tuple]]:
    """Every row of the tables a hand-out, an answer or a gold showing changes."""
    out = {}
    with st.db.reading() as conn:
        for t in (S.items, S.assignments, S.labels, S.gold_answers):
            out[t.name] = sorted(tuple(r) for r in conn.execute(sa.select(t)))
    return out


def _key(item) -> tuple[int, str] | None:  # type: ignore[no-untyped-def]
    return None if item is None else (item.id, item.video_id)


@pytest.mark.parametrize("seed", [0, 1])
def test_peek_names_what_the_hand_out_gives_next(db_url, seed) -> None:  # noqa: F811
    """Random sessions of three annotators over double items, ties, skips, undo, lease expiry
    and gold items: each peek equals the next hand-out and writes nothing."""
    rng = random.Random(seed)
    st = Store(db_url)
    try:
        st.add_items(_pool(14, double_every=3), "T")
        st.gold.load(GOLD)
        st.gold.rate = 0.25
        st.gold.key = (None, b"a key: drawn gold positions")[seed]  # the fixed rule, and the web app's
        ids = [st.add_annotator(f"a{k}")[0].id for k in range(3)]
        labelled: dict[int, set[int]] = {a: set() for a in ids}
        checked = gold_checked = 0
        for _ in range(60):
            a = rng.choice(ids)
            r = rng.random()
            if r < 0.08:
                labelled[a].discard(st.undo(a) or 0)  # an undone item is shown again
                continue
            if r < 0.12:
                st.release_stale(timedelta(0))  # every lease runs out
                continue
            cur = st.next_item(a)  # what the page shows now
            before = _snapshot(st)
            peek = st.peek_next(a)
            assert _snapshot(st) == before, "the peek wrote something"
            if cur is None:
                assert peek is None
                continue
            label = rng.choice(("relevant", "irrelevant", "relevant", "irrelevant", "skip"))
            res = st.submit(a, cur.id, label, claim_next=True)
            if cur.id < GOLD_BASE and res.status == "created":
                labelled[a].add(cur.id)
            shown = st.next_item(a)  # the next page
            assert _key(peek) == _key(shown) == _key(res.next), (seed, a, cur, peek, shown)
            if shown is not None and shown.id < GOLD_BASE:
                assert shown.id not in labelled[a], "an item handed to the same annotator twice"
            checked += 1
            gold_checked += shown is not None and shown.id > GOLD_BASE
        assert checked >= 30 and gold_checked >= 2, (checked, gold_checked)
    finally:
        st.close()


def _app(db: str, n_items: int = 4, **cfg):  # type: ignore[no-untyped-def]
    st = Store(db)
    st.add_items(_pool(n_items), "T")
    tokens = {n: st.add_annotator(n)[1] for n in ("ann", "ann2")}
    ids = {a.name: a.id for a in st.annotators()}
    if cfg.pop("gold", False):
        st.gold.load(GOLD[:1])
    st.close()
    cfg.setdefault("video_url_template", "/media/{video_id}.mp4")
    return create_app(WebConfig(db_url=db, dataset="T", **cfg)), tokens, ids


def _shown(c: TestClient) -> tuple[int, str]:
    html = c.get("/annotate").text
    item = html.split('id="item" data-item-id="')[1]
    return raw_id(c, item.split('"')[0]), video_shown(c, html)


def _peek(c: TestClient) -> str | None:
    r = c.get("/api/peek")
    assert r.status_code == 200, r.text
    assert set(r.json()) == {"video_url"}  # nothing but the URL: no id, caption, gold marker
    return r.json()["video_url"]  # type: ignore[no-any-return]


def _answer(c: TestClient, item_id: int, label: str = "relevant"):  # type: ignore[no-untyped-def]
    tok = csrf_from(c.get("/annotate").text)
    return c.post(
        "/annotate/label",
        data={"csrf_token": tok, "item_id": handle(c, item_id), "label": label, "time_spent_ms": "5"},
        follow_redirects=False,
    )


def test_peek_api_is_read_only_blind_and_needs_a_session(db_url, tmp_path) -> None:  # noqa: F811
    app, tokens, _ = _app(db_url)
    with TestClient(app) as c:
        assert c.get("/api/peek").status_code == 401
        login(c, tokens["ann"])
        assert _shown(c) == (1, "v0")
        page = c.get("/annotate").text
        assert 'id="next-video"' in page and 'data-peek="/api/peek"' in page and 'preload="none"' in page
        r = c.get("/api/peek")
        assert r.json() == {"video_url": "/media/v1.mp4"}
        assert r.headers["cache-control"] == "no-store"
        assert SECRET_RUN not in r.text and "caption" not in r.text
        assert c.post("/api/peek").status_code == 405  # a GET only: no state to change
        before = _snapshot(app.state.store)
        for _ in range(3):
            _peek(c)
        assert _snapshot(app.state.store) == before
        # what the peek named is what the next page shows
        assert _answer(c, 1).status_code == 303
        assert _shown(c) == (2, "v1")


def test_prefetched_item_taken_by_another_annotator(db_url) -> None:  # noqa: F811
    app, tokens, ids = _app(db_url)
    with TestClient(app) as a, TestClient(app) as b:
        login(a, tokens["ann"])
        login(b, tokens["ann2"])
        assert _shown(a) == (1, "v0")
        assert _peek(a) == "/media/v1.mp4"  # ann's page starts loading v1 ...
        assert _shown(b) == (2, "v1")  # ... which ann2 is handed meanwhile (one vote needed)
        assert _peek(a) == "/media/v2.mp4"  # a new peek knows
        tok = a.get("/api/session").json()["csrf_token"]
        # the stale prediction cannot be answered: item 2 is not ann's
        r = post_json(a, "/api/labels", tok, {"item_id": handle(a, 2), "label": "relevant"})
        assert r.status_code == 403
        assert _answer(a, 1).status_code == 303
        assert _shown(a) == (3, "v2")  # the page shows what the server hands out, not v1
        labels = _snapshot(app.state.store)["labels"]
        assert [(r[1], r[2]) for r in labels] == [(1, ids["ann"])]  # (item_id, annotator_id)


def test_peek_after_a_lease_expires(db_url) -> None:  # noqa: F811
    app, tokens, ids = _app(db_url)
    st = app.state.store
    with TestClient(app) as a, TestClient(app) as b:
        login(a, tokens["ann"])
        login(b, tokens["ann2"])
        assert _shown(a) == (1, "v0")
        assert _shown(b) == (2, "v1")
        assert _peek(b) == "/media/v2.mp4"
        # ann walks away: their lease on item 1 runs out (ann2's is fresh and stays)
        with st.db.engine.begin() as conn:
            conn.execute(
                S.assignments.update()
                .where(S.assignments.c.annotator_id == ids["ann"])
                .values(updated_at=now() - timedelta(hours=1))
            )
        assert st.release_stale(timedelta(minutes=5)) == 1
        assert _peek(a) is None  # ann is shown nothing any more: nothing to prefetch
        assert _peek(b) == "/media/v0.mp4"  # item 1 is back in the queue, first in pool order
        assert _answer(b, 2).status_code == 303
        assert _shown(b) == (1, "v0")
        # ann's page still shows item 1: answering it now is refused, nothing is recorded twice
        tok = a.get("/api/session").json()["csrf_token"]
        assert (
            post_json(a, "/api/labels", tok, {"item_id": handle(a, 1), "label": "relevant"}).status_code
            == 403
        )
        assert _shown(a) == (3, "v2")
        assert _peek(a) == "/media/v3.mp4"


def test_peek_names_the_gold_item_without_showing_it(db_url) -> None:  # noqa: F811
    app, tokens, ids = _app(db_url, gold=True, gold_rate=0.5)
    st = app.state.store
    st.gold.key = None  # the fixed rule (gold item second), not a drawn position (judging.gold._gold_turn)
    with TestClient(app) as c:
        login(c, tokens["ann"])
        assert _shown(c) == (1, "v0")
        # after one answer, half of what is shown is gold: the peek names the gold item's video,
        # in the same shape as any other, and does not count it as shown
        assert _peek(c) == "/media/g0.mp4"
        assert _snapshot(st)["gold_answers"] == []
        assert _answer(c, 1).status_code == 303
        gid, vid = _shown(c)
        assert (gid, vid) == (GOLD_BASE + 1, "g0")
        # the pool item claimed with the answer comes after the gold item
        assert _peek(c) == "/media/v1.mp4"
        assert _answer(c, gid, "irrelevant").status_code == 303
        assert _shown(c) == (2, "v1")
        assert _peek(c) == "/media/v2.mp4"  # one gold item only: it is not shown twice


def test_peek_at_the_end_of_the_queue(db_url) -> None:  # noqa: F811
    app, tokens, _ = _app(db_url, n_items=2)
    with TestClient(app) as c:
        login(c, tokens["ann"])
        assert _shown(c) == (1, "v0")
        assert _peek(c) == "/media/v1.mp4"
        assert _answer(c, 1).status_code == 303
        assert _shown(c) == (2, "v1")
        assert _peek(c) is None  # the last item: nothing follows
        assert _answer(c, 2).status_code == 303
        assert "queue-empty" in c.get("/annotate").text
        assert _peek(c) is None


def test_prefetch_off(tmp_path) -> None:
    app, tokens, _ = _app(f"sqlite:///{tmp_path / 'off.db'}", prefetch=False)
    with TestClient(app) as c:
        login(c, tokens["ann"])
        assert 'id="next-video"' not in c.get("/annotate").text
        assert _peek(c) is None


def test_videos_are_cacheable_by_this_browser_only(tmp_path) -> None:
    """The prefetched video must be reusable from the browser's cache: a lifetime, ``private``,
    and no ``Vary: Cookie`` (Chromium re-downloaded such videos). Pages keep ``no-store``."""
    videos = tmp_path / "videos"
    videos.mkdir()
    (videos / "v0.mp4").write_bytes(b"\x00" * 2048)
    (tmp_path / "secret.mp4").write_bytes(b"secret")
    app, tokens, _ = _app(f"sqlite:///{tmp_path / 'v.db'}", video_dir=videos, video_url_template=None)
    with TestClient(app) as c:
        assert c.get("/videos/v0.mp4").status_code == 401
        login(c, tokens["ann"])
        v0 = video_token_url(c, "v0")  # annotators name videos by their session's tokens
        r = c.get(v0, headers={"Range": "bytes=0-"})
        assert r.status_code == 206 and len(r.content) == 2048
        assert r.headers["cache-control"] == "private, max-age=3600"
        assert "cookie" not in r.headers.get("vary", "").lower()
        assert c.get("/videos/..%2Fsecret.mp4").status_code == 404  # still the configured directory only
        page = c.get("/annotate")
        assert page.headers["cache-control"] == "no-store" and page.headers["vary"] == "Cookie"
        assert f'src="{v0}#t=0.1"' in page.text
        assert _peek(c) == video_token_url(c, "v1")  # the URL the next page's player will load
    assert _without_cookie(b"Accept-Encoding, cookie,Origin") == b"Accept-Encoding, Origin"
    assert _without_cookie(b"Cookie") == b""
