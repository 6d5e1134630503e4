"""A flag raised on a gold item stays a flag with its reason (issue 24 item 9): shown to the
admin with the known answer, the gold answer left out of gold accuracy, and the annotator told
the truth ("flagged for review") exactly as for a pool item."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient
from helpers import csrf_from, login, raw_id
from test_annotation_ux import db_url  # noqa: F401  (fixture: SQLite, and PostgreSQL with FIREVAL_PG_URL)

from fireval.judging.gold import GOLD_BASE, GoldPair
from fireval.judging.pool import PoolItem
from fireval.judging.store import Store
from fireval.web.app import WebConfig, create_app


def _app(url: str):  # type: ignore[no-untyped-def]
    st = Store(url)
    st.add_items([PoolItem(f"caption {i}", [f"c{i}"], f"v{i}", {"A": 1}) for i in range(4)], "T")
    st.gold.load([GoldPair("a gold dog", "gv1", "relevant"), GoldPair("a gold cat", "gv2", "irrelevant")])
    _, ann = st.add_annotator("ann")
    _, boss = st.add_annotator("boss", "admin")
    st.close()
    app = create_app(WebConfig(db_url=url, gold_rate=0.5))
    return app, ann, boss


def _to_gold(c: TestClient, app) -> str:  # type: ignore[no-untyped-def]
    """Answer pool items through the page until the page shows a gold item; its handle."""
    for _ in range(10):
        page = c.get("/annotate").text
        h = re.search(r'id="item" data-item-id="([^"]+)"', page).group(1)  # type: ignore[union-attr]
        if raw_id(c, h) > GOLD_BASE:
            return h
        c.post("/annotate/label", data={"csrf_token": csrf_from(page), "item_id": h, "label": "relevant"})
    raise AssertionError("no gold item handed out")


def test_gold_flag_keeps_its_reason_for_the_admin_and_leaves_accuracy(db_url) -> None:  # noqa: F811
    app, ann, boss = _app(db_url)
    st = app.state.store
    with TestClient(app) as c, TestClient(app) as admin:
        login(c, ann)
        h = _to_gold(c, app)
        gold_id = raw_id(c, h)
        page = c.get("/annotate").text
        r = c.post(
            "/annotate/flag",
            data={"csrf_token": csrf_from(page), "item_id": h, "reason": "is a toy dog a dog?"},
        )
        assert r.status_code == 200
        assert "Flagged for review; an expert will look at it." in r.text  # true: it is in the queue
        login(admin, boss)
        review = admin.get("/admin/review").text
        row = review.split(f'id="flag-item-{gold_id}"')[1].split("</tr>")[0]
        known = {GOLD_BASE + g: a for g, a in ((1, "relevant"), (2, "irrelevant"))}[gold_id]
        assert "is a toy dog a dog?" in row and "gold item" in row and f"known answer: {known}" in row
        assert 'value="relevant"' not in row and 'value="discard"' in row  # dismiss only
        assert "1 open flag(s) on 1 item(s)" in admin.get("/admin").text
        # flag an answered gold item from the history: the answer stands for the annotator, but
        # gold accuracy leaves it out
        h2 = _to_gold(c, app)
        page = c.get("/annotate").text
        c.post("/annotate/label", data={"csrf_token": csrf_from(page), "item_id": h2, "label": "irrelevant"})
        assert st.gold.accuracy()["ann"]["answered"] == 1
        c.post("/annotate/flag", data={"csrf_token": csrf_from(page), "item_id": h2, "reason": "hm"})
        assert "ann" not in st.gold.accuracy()
        assert [a["label"] for a in c.get("/api/history").json()["answers"] if a["item_id"] == h2] == [
            "irrelevant"
        ]
        # the admin: a label is refused for a gold item (its answer is known); dismissing closes it
        tok = csrf_from(review)
        bad = admin.post(
            "/admin/review/resolve", data={"csrf_token": tok, "item_id": gold_id, "resolution": "relevant"}
        )
        assert bad.status_code == 422 and "gold item" in bad.text
        admin.post(
            "/admin/review/resolve", data={"csrf_token": tok, "item_id": gold_id, "resolution": "discard"}
        )
        assert st.flags.summary()["resolved"] == {"discard": 1}
        assert f'id="flag-item-{gold_id}"' not in admin.get("/admin/review").text


def test_gold_flag_needs_the_item_shown(db_url) -> None:  # noqa: F811
    app, _ann, _boss = _app(db_url)
    with TestClient(app):  # (closes the store)
        st = app.state.store
        ann = next(a for a in st.annotators() if a.name == "ann")
        with pytest.raises(Exception) as e:  # never shown to ann: refused as for a pool item
            st.flags.flag(ann.id, GOLD_BASE + 1, "x")
        assert getattr(e.value, "status", None) == 403 and "not assigned to you" in str(e.value)
        assert st.flags.summary()["open"] == 0
