"""Issue 11, item 5: the web app's errors.

- Annotators name items by opaque per-session handles (blind judging, ``fireval.web.handles``):
  a raw id of any value (an existing item's, ≥ 2^63, ≥ 2^31, negative, zero), as a JSON integer
  or as a string, and any string that is not a handle of the session are 404 "unknown item" on
  every annotator endpoint (JSON API and form posts alike); an ``item_id`` that is not well
  formed (missing, a boolean, float, NaN, list or object) is 422. Admin routes take raw ids:
  ids no row can have → 404, non-integers → 422. Never 500.
- Storage errors (a full disk, a database that went away), injected at the write/read → a JSON
  503 for the API, a readable page for a browser's form, no traceback, nothing acknowledged
  that was not stored, and the app works again once the fault is gone.
- After such an error, the next request on the same keep-alive connection is answered (a
  real server on loopback).
"""

from __future__ import annotations

import http.client
import json
import re
import sqlite3

import pytest
import sqlalchemy as sa
from benchmarks.loadgen import ServerProcess, label_id, session_id
from fastapi.testclient import TestClient

from fireval.judging.pool import PoolItem
from fireval.judging.store import Store
from fireval.web.app import WebConfig, create_app

CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')
BAD_IDS = [2**63, 2**64 + 5, 2**31, -1, -(2**63) - 1, 0]
NOT_INTS = ["abc", "1.5", "", "1e3", "0x10"]
MALFORMED = [1e300, float("nan"), 1.0, [1], {"a": 1}, True, None]  # JSON item_id types that are no id
# annotator JSON endpoints taking an item_id, with the rest of a valid body
ANNOTATOR_JSON = {
    "/api/labels": {"label": "relevant"},
    "/api/undo": {},
    "/api/skip": {"reason": "x"},
    "/api/flags": {"reason": "x"},
    "/api/history/change": {"label": "relevant"},
}
ANNOTATOR_FORMS = {
    "/annotate/label": {"label": "relevant"},
    "/annotate/skip": {"skip_reason": "x"},
    "/annotate/flag": {"reason": "x"},
    "/annotate/change": {"label": "relevant"},
}


def make_db(path, n: int = 6) -> tuple[str, dict[str, str]]:
    db = f"sqlite:///{path}"
    st = Store(db)
    st.add_items([PoolItem(f"caption {i}", [f"c{i}"], f"v{i}", {"A": 1}) for i in range(n)], "T")
    tokens = {
        name: st.add_annotator(name, role)[1] for name, role in (("ann", "annotator"), ("boss", "admin"))
    }
    st.close()
    return db, tokens


def login(c, token: str) -> str:
    page = c.get("/login")
    r = c.post(
        "/login", data={"token": token, "csrf_token": CSRF.search(page.text).group(1)}, follow_redirects=False
    )
    assert r.status_code == 303
    return str(c.get("/api/session").json()["csrf_token"])


@pytest.fixture
def env(tmp_path):
    db, tokens = make_db(tmp_path / "s.db")
    return create_app(WebConfig(db_url=db)), tokens


def test_out_of_range_and_negative_ids_are_404_everywhere(env) -> None:
    app, tokens = env
    with (
        TestClient(app, raise_server_exceptions=False) as c,
        TestClient(app, raise_server_exceptions=False) as a,
    ):
        h = {"X-CSRF-Token": login(c, tokens["ann"])}
        admin_csrf = login(a, tokens["boss"])
        # the store's ids of real items (1 is the one /api/next gives) are no handles either
        for bad in [*BAD_IDS, 1, 2]:
            for path, rest in ANNOTATOR_JSON.items():
                r = c.post(path, json={"item_id": bad, **rest}, headers=h)
                assert r.status_code == 404 and r.json() == {"detail": "unknown item"}, (path, bad, r.text)
            for path, rest in ANNOTATOR_FORMS.items():
                form = {"item_id": str(bad), **rest, "csrf_token": h["X-CSRF-Token"]}
                r = c.post(path, data=form, headers={"accept": "text/html"})
                assert r.status_code == 404 and "unknown item" in r.text, (path, bad, r.text)
                assert "Traceback" not in r.text
            if bad in (1, 2):
                continue  # real rows: the admin routes below take raw ids
            adj = {"item_id": str(bad), "label": "relevant", "csrf_token": admin_csrf}
            assert a.post("/admin/adjudicate", data=adj).status_code == 404
            assert (
                a.post(f"/admin/annotators/{bad}/revoke", data={"csrf_token": admin_csrf}).status_code == 404
            )
        assert c.get("/api/next").status_code == 200  # nothing broke
    assert app.state.store.votes()["label_id"].size == 0


def test_non_integer_ids_are_422(env) -> None:
    app, tokens = env
    with (
        TestClient(app, raise_server_exceptions=False) as c,
        TestClient(app, raise_server_exceptions=False) as a,
    ):
        h = {"X-CSRF-Token": login(c, tokens["ann"])}
        admin_csrf = login(a, tokens["boss"])
        for bad in NOT_INTS:
            # annotators send handles (strings): a string that is not one is an unknown item
            r = c.post("/api/labels", json={"item_id": bad, "label": "relevant"}, headers=h)
            assert r.status_code == 404 and r.json() == {"detail": "unknown item"}, (bad, r.text)
            form = {"item_id": bad, "label": "relevant", "csrf_token": h["X-CSRF-Token"]}
            assert c.post("/annotate/label", data=form).status_code == 404
            # admin routes take raw ids: a non-integer is malformed
            adj = {"item_id": bad, "label": "relevant", "csrf_token": admin_csrf}
            assert a.post("/admin/adjudicate", data=adj).status_code == 422
            if bad:
                path = f"/admin/annotators/{bad}/revoke"
                assert a.post(path, data={"csrf_token": admin_csrf}).status_code == 422
        # an item_id of no id's type, or none at all, is malformed on every annotator endpoint
        for path, rest in ANNOTATOR_JSON.items():
            for bad in MALFORMED:
                if bad is None and path == "/api/undo":
                    continue  # {"item_id": null}: undo the last answer, whichever it is
                body = json.dumps({"item_id": bad, **rest}, allow_nan=True)
                r = c.post(path, content=body, headers={**h, "content-type": "application/json"})
                assert r.status_code == 422, (path, bad, r.status_code, r.text)
            if path != "/api/undo":
                assert c.post(path, json=rest, headers=h).status_code == 422, path  # no item_id
        for path, rest in ANNOTATOR_FORMS.items():
            assert c.post(path, data={**rest, "csrf_token": h["X-CSRF-Token"]}).status_code == 422, path
        assert c.get("/api/next").status_code == 200  # nothing broke
    assert app.state.store.votes()["label_id"].size == 0


class Fault:
    """Make the store's database fail like a full disk: statements matching ``pattern`` raise
    SQLite's own error (``database or disk is full``, SQLITE_FULL) while ``on``."""

    def __init__(self, store: Store, pattern: str) -> None:
        self.on, self.pattern = False, pattern
        for eng in {store.engine, store.read_engine}:
            sa.event.listen(eng, "before_cursor_execute", self)

    def __call__(self, conn, cursor, statement, params, context, executemany) -> None:
        if self.on and re.search(self.pattern, statement, re.I):
            raise sqlite3.OperationalError("database or disk is full")


def row_of(c, answer: str) -> int:
    """The label row behind an answer handle (answers carry no row id: blind judging)."""
    return label_id(c.app.state.config.secret_key, session_id(c.cookies.get("fireval_session")), answer)


def test_disk_full_at_the_write_is_503_and_nothing_acknowledged_is_lost(env) -> None:
    app, tokens = env
    store = app.state.store
    fault = Fault(store, r"^\s*INSERT INTO labels")
    acked: list[int] = []
    with TestClient(app, raise_server_exceptions=False) as c:
        h = {"X-CSRF-Token": login(c, tokens["ann"])}
        item = c.get("/api/next").json()["item"]
        r = c.post("/api/labels", json={"item_id": item["id"], "label": "relevant", "next": True}, headers=h)
        assert r.status_code == 200
        acked.append(row_of(c, r.json()["answer"]))
        item = r.json()["next"]
        fault.on = True
        r = c.post(
            "/api/labels", json={"item_id": item["id"], "label": "irrelevant", "next": True}, headers=h
        )
        assert r.status_code == 503 and r.headers["retry-after"] == "5"
        assert r.headers["content-type"].startswith("application/json")
        assert "unavailable" in r.json()["detail"] and "Traceback" not in r.text and "INSERT" not in r.text
        # the form post of a browser gets a readable page
        form = {"item_id": str(item["id"]), "label": "irrelevant", "csrf_token": h["X-CSRF-Token"]}
        r = c.post("/annotate/label", data=form, headers={"accept": "text/html"})
        assert r.status_code == 503 and "<h1>Temporarily unavailable</h1>" in r.text
        assert "nothing was saved" in r.text and "Traceback" not in r.text
        fault.on = False
        # the same answer goes through once the disk has room; nothing was half-written
        r = c.post("/api/labels", json={"item_id": item["id"], "label": "irrelevant"}, headers=h)
        assert r.status_code == 200 and r.json()["status"] == "created"
        acked.append(row_of(c, r.json()["answer"]))
    v = store.votes()
    assert sorted(v["label_id"].tolist()) == sorted(acked)  # lost 0, extra 0
    assert len(set(zip(v["item_id"].tolist(), v["annotator_id"].tolist()))) == len(acked)


def test_storage_errors_on_reads_and_logins_are_503(env) -> None:
    app, tokens = env
    fault = Fault(app.state.store, r"FROM (labels|sessions|annotators)")
    with TestClient(app, raise_server_exceptions=False) as c:
        h = {"X-CSRF-Token": login(c, tokens["ann"])}
        fault.on = True
        for r in (
            c.get("/api/progress"),
            c.get("/api/next"),
            c.get("/annotate", headers={"accept": "text/html"}),
        ):
            assert r.status_code == 503 and "Traceback" not in r.text
        page = c.get("/login")
        r = c.post("/login", data={"token": tokens["ann"], "csrf_token": CSRF.search(page.text).group(1)})
        assert r.status_code == 503
        fault.on = False
        assert c.get("/api/progress", headers=h).status_code == 200


def test_keep_alive_connection_survives_errors(tmp_path) -> None:
    """Against a real server: the request after a bad id is served on the same connection."""
    db, tokens = make_db(tmp_path / "k.db")
    server = ServerProcess(db, log=tmp_path / "server.log").start()
    try:
        import httpx

        with httpx.Client(base_url=server.url) as c:
            csrf = login(c, tokens["ann"])
            cookie = "; ".join(f"{k}={v}" for k, v in c.cookies.items())
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
        h = {"Cookie": cookie, "X-CSRF-Token": csrf, "Content-Type": "application/json"}
        conn.request("GET", "/api/next", headers=h)
        first = conn.getresponse()
        item = json.loads(first.read())["item"]
        sock = conn.sock
        for body in (
            {"item_id": 2**64, "label": "relevant"},
            {"item_id": -5, "label": "relevant"},
            {"item_id": "x", "label": "relevant"},
        ):
            conn.request("POST", "/api/labels", body=json.dumps(body), headers=h)
            resp = conn.getresponse()
            assert resp.status in (404, 422) and resp.getheader("connection", "").lower() != "close"
            resp.read()
        conn.request(
            "POST", "/api/labels", body=json.dumps({"item_id": item["id"], "label": "relevant"}), headers=h
        )
        resp = conn.getresponse()
        assert resp.status == 200 and json.loads(resp.read())["status"] == "created"
        assert conn.sock is sock  # the same TCP connection served every request
        conn.close()
    finally:
        server.stop()
    assert "Traceback" not in (tmp_path / "server.log").read_text()
