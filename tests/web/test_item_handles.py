"""Blind judging: annotators see opaque item handles, never the store's ids (gold items have ids
above ``GOLD_BASE``, pool items small ones). :mod:`fireval.web.handles`."""

from __future__ import annotations

import re

from fastapi.testclient import TestClient
from helpers import csrf_from, handle, login, raw_id
from test_annotation_ux import db_url, post_json  # noqa: F401  (fixture)

from fireval.judging.gold import GOLD_BASE, GoldPair
from fireval.judging.pool import PoolItem
from fireval.judging.store import Store
from fireval.web.app import WebConfig, create_app
from fireval.web.handles import LENGTH, Handles

GOLD = [GoldPair("a red car drives", "g1", "relevant"), GoldPair("a cat swims", "g2", "irrelevant")]
SHAPE = re.compile(r"[A-Za-z0-9_-]{32}")
# every place an item or answer id can reach the annotator: data-*id attributes, hidden *id
# fields, history rows, and any JSON key ending in "id" (label_id, gold_id, flag_id... as well
# as item_id and id) or "answer" (answers carry an answer handle, never a row id:
# test_blind_answers); the video id is no exception (a video id is not shown either:
# test_video_tokens)
ID_LIKE = re.compile(
    r'data-[a-z-]*id="([^"]*)"|name="[a-z_]*id" value="([^"]*)"|id="hist-([^"]*)"'
    r'|"(?:[a-z_]*id|answer)":\s*"?([^",}]*)"?'
)


def _app(db: str):  # type: ignore[no-untyped-def]
    st = Store(db)
    st.add_items([PoolItem(f"pool caption {i}", [f"c{i}"], f"v{i}", {"RUN": 1}) for i in range(6)], "T")
    tokens = {n: st.add_annotator(n)[1] for n in ("ann", "ann2")}
    st.gold.load(GOLD)
    st.close()
    cfg = WebConfig(db_url=db, dataset="T", gold_rate=0.25, video_url_template="/m/{video_id}.mp4")
    return create_app(cfg), tokens


def test_handles_round_trip_fixed_shape_and_per_session() -> None:
    h = Handles("secret")
    for item_id in (0, 1, 7, 2**31, GOLD_BASE + 1, GOLD_BASE + 10**6, 2**63 - 1):
        x = h.encode("sid-a", item_id)
        assert SHAPE.fullmatch(x) and len(x) == LENGTH
        assert h.decode("sid-a", x) == item_id
        assert h.decode("sid-b", x) is None  # another session (annotator) cannot use it
        assert Handles("other secret").decode("sid-a", x) is None
        assert h.encode("sid-a", item_id) == x  # stable within the session (duplicates recognised)
        assert h.encode("sid-b", item_id) != x
        for k in range(LENGTH):  # any edited character is refused
            c = "A" if x[k] != "A" else "B"
            assert h.decode("sid-a", x[:k] + c + x[k + 1 :]) is None
    for bad in (1, "1", str(GOLD_BASE + 1), "", None, "A" * 31, "A" * 33, "=" * 32, "é" * 32):
        assert h.decode("sid-a", bad) is None


def test_gold_and_pool_look_alike_to_the_annotator(db_url) -> None:  # noqa: F811
    """Every id-like value an annotator sees over a whole session (pages and JSON, with gold
    mixed in) is a 32-character handle; no store id appears; gold and pool items differ in
    nothing but caption and video."""
    app, tokens = _app(db_url)
    bodies: list[str] = []
    shown: list[dict] = []
    with TestClient(app) as c:
        tok = login(c, tokens["ann"])
        item = c.get("/api/next").json()["item"]
        step = 0
        while item is not None:
            page = c.get("/annotate")
            nxt = c.get("/api/next")
            bodies += [page.text, nxt.text, c.get("/api/peek").text, c.get("/api/history").text]
            assert nxt.json()["item"] == item
            shown.append({**item, "raw": raw_id(c, item["id"]), "peeked": c.get("/api/peek").json()})
            if step == 1:  # a form answer, then undo (JSON), then answer again
                r = c.post(
                    "/annotate/label",
                    data={"csrf_token": csrf_from(page.text), "item_id": item["id"], "label": "relevant"},
                )
                bodies.append(r.text)
                u = post_json(c, "/api/undo", tok, {"item_id": item["id"]})
                assert u.status_code == 200 and u.json() == {"item_id": item["id"]}
                bodies.append(u.text)
            if step == 2:  # a skip by the JSON API
                r = post_json(
                    c, "/api/skip", tok, {"item_id": item["id"], "reason": "video failed", "next": True}
                )
            elif step == 4:  # a flag
                r = post_json(c, "/api/flags", tok, {"item_id": item["id"], "reason": "hm", "next": True})
            else:
                body = {"item_id": item["id"], "label": "irrelevant", "next": True}
                r = post_json(c, "/api/labels", tok, body)
            assert r.status_code == 200, r.text
            assert r.json()["item_id"] == item["id"]
            bodies.append(r.text)
            item = r.json()["next"]
            step += 1
        bodies += [c.get("/annotate").text, c.get("/api/history").text]
        # the history form changes an answer by its handle
        hist = c.get("/api/history").json()["answers"]
        ch = post_json(c, "/api/history/change", tok, {"item_id": hist[0]["item_id"], "label": "skip"})
        assert ch.status_code == 200 and ch.json()["item_id"] == hist[0]["item_id"]
        bodies.append(ch.text)
    gold = [s for s in shown if s["raw"] > GOLD_BASE]
    pool = [s for s in shown if s["raw"] < GOLD_BASE]
    assert len(gold) == 2 and len(pool) == 6, [s["raw"] for s in shown]
    # what the annotator sees of an item: the same keys, a handle of the same shape
    assert {frozenset(s) for s in shown} == {frozenset({"id", "caption", "video_url", "raw", "peeked"})}
    assert all(SHAPE.fullmatch(s["id"]) for s in shown)
    assert len({s["id"] for s in shown}) == len(shown)
    # the video URLs (the player's and the prefetch's) have the same form
    for s in shown:
        assert re.fullmatch(r"/m/[gv]\d\.mp4", s["video_url"])  # the URL template's (it names the id)
        assert s["peeked"]["video_url"] is None or re.fullmatch(r"/m/[gv]\d\.mp4", s["peeked"]["video_url"])
    # every id-like value in every page and answer is a handle
    values = [v for b in bodies for m in ID_LIKE.finditer(b) for v in m.groups() if v]
    assert len(values) > 40
    bad = [v for v in values if not SHAPE.fullmatch(v) and v != "null"]
    assert bad == [], bad[:5]
    assert {s["id"] for s in gold} <= set(values) and {s["id"] for s in pool} <= set(values)
    for b in bodies:  # no store id anywhere (the pool's small ids could hide in text; gold ones not)
        assert not re.search(r"(?<![\w-])2\d{9}(?![\w-])", b)
        for s in gold:
            assert str(s["raw"]) not in b


def test_handles_are_not_transferable_and_raw_ids_are_refused(db_url) -> None:  # noqa: F811
    app, tokens = _app(db_url)
    with TestClient(app) as a, TestClient(app) as b:
        tok_a, tok_b = login(a, tokens["ann"]), login(b, tokens["ann2"])
        ha = a.get("/api/next").json()["item"]["id"]
        item_id = raw_id(a, ha)
        page_b = b.get("/annotate").text
        hb = b.get("/api/next").json()["item"]["id"]
        assert hb != ha
        # B sends A's handle everywhere an item id is taken: unknown item (404), nothing written
        for url, body in (
            ("/api/labels", {"item_id": ha, "label": "relevant", "next": True}),
            ("/api/undo", {"item_id": ha}),
            ("/api/skip", {"item_id": ha, "reason": "x"}),
            ("/api/flags", {"item_id": ha, "reason": "x"}),
            ("/api/history/change", {"item_id": ha, "label": "skip"}),
        ):
            r = post_json(b, url, tok_b, body)
            assert r.status_code == 404 and r.json() == {"detail": "unknown item"}, (url, r.text)
        for url in ("/annotate/label", "/annotate/skip", "/annotate/flag", "/annotate/change"):
            form = {"csrf_token": csrf_from(page_b), "item_id": ha, "label": "relevant"}
            assert b.post(url, data=form).status_code == 404, url
        # A answers by the store's id: refused as an unknown item (a JSON integer or its digits)
        for bad, status in ((item_id, 404), (str(item_id), 404), (handle(b, item_id), 404)):
            r = post_json(a, "/api/labels", tok_a, {"item_id": bad, "label": "relevant"})
            assert r.status_code == status, (bad, r.text)
            r = post_json(a, "/api/undo", tok_a, {"item_id": bad})
            assert r.status_code == status, (bad, r.text)
        form = {
            "csrf_token": csrf_from(a.get("/annotate").text),
            "item_id": str(item_id),
            "label": "relevant",
        }
        assert a.post("/annotate/label", data=form).status_code == 404
        assert app.state.store.votes()["label_id"].size == 0
        # A's own handle works
        assert post_json(a, "/api/labels", tok_a, {"item_id": ha, "label": "relevant"}).status_code == 200
