"""POST /api/labels checks the session inside the answer's own write transaction
(Store.submit_in_session): a revoked session never writes, even for an item it holds."""

from __future__ import annotations

import re

from fastapi.testclient import TestClient
from helpers import raw_id

from fireval.judging.pool import PoolItem
from fireval.judging.store import Store
from fireval.web.app import WebConfig, create_app

CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')


def _client_logged_in(c: TestClient, token: str) -> dict[str, str]:
    page = c.get("/login")
    c.post("/login", data={"token": token, "csrf_token": CSRF.search(page.text).group(1)})
    return {"X-CSRF-Token": c.get("/api/session").json()["csrf_token"]}


def test_revoked_session_cannot_answer_its_open_item(tmp_path) -> None:
    db = f"sqlite:///{tmp_path / 's.db'}"
    st = Store(db)
    st.add_items([PoolItem(f"caption {i}", [f"c{i}"], f"v{i}", {"A": 1}) for i in range(4)], "T")
    _, token = st.add_annotator("ann")
    st.close()
    app = create_app(WebConfig(db_url=db))
    with TestClient(app) as c:
        h = _client_logged_in(c, token)
        item = c.get("/api/next").json()["item"]["id"]
        item_id = raw_id(c, item)
        ok = c.post("/api/labels", json={"item_id": item, "label": "relevant", "next": True}, headers=h)
        assert ok.status_code == 200 and ok.json()["status"] == "created"
        held = ok.json()["next"]["id"]  # assigned to this annotator: only the session stops it
        assert app.state.store.revoke_sessions("ann") == 1
        r = c.post("/api/labels", json={"item_id": held, "label": "relevant", "next": True}, headers=h)
        assert r.status_code == 401
        v = app.state.store.votes()
        assert v["item_id"].tolist() == [item_id]  # nothing written by the revoked session
        held_id = raw_id(c, held)
        # a fresh login answers the held item normally, by the new session's handle (the old
        # session's handles mean nothing in it)
        h = _client_logged_in(c, token)
        r = c.post("/api/labels", json={"item_id": held, "label": "irrelevant"}, headers=h)
        assert r.status_code == 404
        held = c.get("/api/next").json()["item"]["id"]
        assert raw_id(c, held) == held_id
        r = c.post("/api/labels", json={"item_id": held, "label": "irrelevant"}, headers=h)
        assert r.status_code == 200 and r.json()["status"] == "created"


def test_submit_in_session_unknown_session_writes_nothing(tmp_path) -> None:
    st = Store(f"sqlite:///{tmp_path / 's.db'}")
    st.add_items([PoolItem("a cat", ["c0"], "v0", {"A": 1})], "T")
    ann, _ = st.add_annotator("ann")
    item = st.next_item(ann.id)
    assert st.submit_in_session("not-a-session", item.id, "relevant") is None
    assert st.votes()["label_id"].size == 0
    from datetime import timedelta

    sid = st.open_session(ann.id, timedelta(hours=1))
    res = st.submit_in_session(sid, item.id, "relevant", claim_next=True)
    assert res is not None and res.status == "created" and res.next is None
    assert st.votes()["annotator_id"].tolist() == [ann.id]
    st.close()
