"""``POST /api/labels`` answered before the middleware stack (``FirevalApp.fast_label``) against
the full stack (the FastAPI middleware and the Starlette route, ``fast_label = None``): the
same status, body and security headers for every request, refused or accepted."""

from __future__ import annotations

import json
import re
import sqlite3
from unittest.mock import ANY

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient
from helpers import handle, login, session_sid

from fireval.judging.pool import PoolItem
from fireval.judging.store import Store
from fireval.web.app import WebConfig, create_app

HEADERS = (
    "content-type",
    "content-security-policy",
    "x-frame-options",
    "x-content-type-options",
    "referrer-policy",
    "cache-control",
    "retry-after",
)


def make_app(tmp_path, name: str):
    db = f"sqlite:///{tmp_path / name}"
    st = Store(db)
    st.add_items([PoolItem(f"caption {i}", [f"c{i}"], f"v{i}", {"A": 1}) for i in range(6)], "T")
    token = st.add_annotator("ann")[1]
    st.close()
    app = create_app(WebConfig(db_url=db, dataset="T", max_body_bytes=2048, secret_key="k" * 43))
    return app, token


def disk_full(conn, cursor, statement, params, context, executemany) -> None:
    if statement.lstrip().upper().startswith("INSERT INTO LABELS"):
        raise sqlite3.OperationalError("database or disk is full")


HANDLE = re.compile(r"[A-Za-z0-9_-]{32}")


def unhandle(c, obj: object) -> object:
    """``obj`` with every item handle of ``c``'s session replaced by ``<item N>`` and every answer
    handle by ``<answer N>`` (the two apps' sessions differ, so do their handles; the store's
    ids behind them must not)."""
    sid = session_sid(c)

    def sub(m: re.Match[str]) -> str:
        got = c.app.state.handles.decode(sid, m.group(0))
        if got is not None:
            return f"<item {got}>"
        code = c.app.state.answer_handles.decode(sid, m.group(0))
        return m.group(0) if code is None else f"<answer {code}>"

    if isinstance(obj, str):
        return HANDLE.sub(sub, obj)
    if isinstance(obj, dict):
        return {k: unhandle(c, v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [unhandle(c, v) for v in obj]
    return obj


def answer(r, c=None) -> tuple[int, object, dict[str, str | None]]:
    try:
        body: object = r.json()
    except ValueError:
        body = r.text
    if c is not None:
        body = unhandle(c, body)
    return r.status_code, body, {h: r.headers.get(h) for h in HEADERS}


@pytest.mark.parametrize("store_down", [False, True])
def test_fast_path_answers_as_the_full_stack(tmp_path, store_down) -> None:
    # two identical stores and apps (same secret): one answers through the fast path, the other
    # through the full stack; the same requests in the same order must get the same answers
    fast, token = make_app(tmp_path, "fast.db")
    slow, token2 = make_app(tmp_path, "slow.db")
    slow.fast_label = None
    assert fast.fast_label is not None
    with TestClient(fast) as a, TestClient(slow) as b:
        csrf = {id(a): login(a, token), id(b): login(b, token2)}
        item = {id(c): c.get("/api/next").json()["item"]["id"] for c in (a, b)}

        def both(*, body=None, raw=None, headers=None, csrf_ok=True, cookie=True):
            out = []
            for c in (a, b):
                h = dict(headers or {})
                if csrf_ok is not None:
                    h["X-CSRF-Token"] = csrf[id(c)] if csrf_ok else "wrong"
                # body: the same JSON for both, or made per client (each session has its own handles)
                kw = {"content": raw} if raw is not None else {"json": body(c) if callable(body) else body}
                if not cookie:
                    saved = dict(c.cookies)
                    c.cookies.clear()
                r = c.post("/api/labels", headers=h, **kw)
                if not cookie:
                    c.cookies.update(saved)
                out.append(answer(r, c if cookie else None))
            assert out[0] == out[1], out
            return out[0]

        def mine(item_id: int, **extra):  # noqa: ANN202
            return lambda c: {"item_id": handle(c, item_id), **extra}

        assert unhandle(a, item[id(a)]) == unhandle(b, item[id(b)]) == "<item 1>"
        assert item[id(a)] != item[id(b)]  # one handle per session
        it = 1
        assert both(body=mine(it, label="relevant"), csrf_ok=None)[0] == 403  # no header
        assert both(body=mine(it, label="relevant"), csrf_ok=False)[0] == 403
        assert both(body=mine(it, label="relevant"), cookie=False)[0] == 403
        assert both(raw=b"{not json", headers={"content-type": "application/json"})[0] == 422
        assert both(body={"item_id": "1", "label": "relevant", "next": "maybe"})[0] == 422
        assert both(body=[1, 2])[0] == 422
        assert both(raw=b"x" * 4000, headers={"content-type": "application/json"})[0] == 413
        assert both(body=mine(it, label="maybe"))[0] == 422  # not a label
        # the store's ids are refused as unknown handles, whatever their value and JSON type
        for raw_id in (it, it + 1, 0, -1, 2**31, 2**63, -(2**63) - 1, 10**30):
            for sent in (raw_id, str(raw_id)):
                assert both(body={"item_id": sent, "label": "relevant"}) == (
                    404,
                    {"detail": "unknown item"},
                    ANY,
                ), sent
        # an item_id that is no id at all is malformed
        for bad in (True, False, 1.0, 1.5, None, [it], {"id": it}):
            assert both(body={"item_id": bad, "label": "relevant"})[0] == 422, bad
        assert both(body={"label": "relevant"})[0] == 422
        # the other session's handle of the same item, an edited handle, a handle of the wrong shape
        other = {id(a): item[id(b)], id(b): item[id(a)]}
        assert both(body=lambda c: {"item_id": other[id(c)], "label": "relevant"})[:2] == (
            404,
            {"detail": "unknown item"},
        )
        flip = {"A": "B", "B": "A"}
        edited = lambda c: {"item_id": item[id(c)][:-1] + flip.get(item[id(c)][-1], "A"), "label": "relevant"}  # noqa: E731
        assert both(body=edited)[0] == 404
        assert both(body=lambda c: {"item_id": item[id(c)] + "A", "label": "relevant"})[0] == 404
        # handles of ids no row can have, or of an item that is not this annotator's
        assert both(body=mine(2**63, label="relevant"))[0] == 404
        assert both(body=mine(999, label="relevant"))[:2] == (404, {"detail": "unknown item <item 999>"})
        assert both(body=mine(it + 1, label="relevant"))[:2] == (
            403,
            {"detail": f"item <item {it + 1}> is not assigned to you"},  # the handle, never the id
        )
        if store_down:
            for app in (fast, slow):  # a full disk at the answer's INSERT (SQLite's own error)
                sa.event.listen(app.state.store.engine, "before_cursor_execute", disk_full)
            status, body, headers = both(body=mine(it, label="relevant", next=True))
            assert status == 503 and headers["retry-after"] == "5"
            return
        status, body, _ = both(body=mine(it, label="relevant", next=True, time_spent_ms=5))
        assert status == 200 and body["status"] == "created" and body["item_id"] == f"<item {it}>"
        assert body["next"]["id"] == "<item 2>"
        assert both(body=mine(it, label="relevant"))[1]["status"] == "duplicate"
        status, body, _ = both(body=mine(it, label="irrelevant"))
        assert status == 409 and f"item <item {it}> already" in body["detail"]
        # a copy of the cookie stops working once the session ends (checked in the write)
        for c in (a, b):
            c.app.state.store.revoke_sessions("ann")
        assert both(body=mine(it + 1, label="relevant"))[0] == 401


def test_fast_path_rejects_a_forged_or_expired_cookie(tmp_path) -> None:
    app, token = make_app(tmp_path, "s.db")
    with TestClient(app) as c:
        csrf = login(c, token)
        it = c.get("/api/next").json()["item"]["id"]
        good = c.cookies["fireval_session"]
        # same payload, signature of another key: refused before the body is read
        from itsdangerous import TimestampSigner

        payload = good.rsplit(".", 2)[0]
        forged = TimestampSigner("other" * 9).sign(payload.encode()).decode()
        c.cookies.set("fireval_session", forged)
        r = c.post("/api/labels", json={"item_id": it, "label": "relevant"}, headers={"X-CSRF-Token": csrf})
        assert r.status_code == 403 and json.loads(r.text)["detail"] == "missing or invalid CSRF token"
        # the real cookie works, and keeps working once it is cached
        c.cookies.set("fireval_session", good)
        for _ in range(2):
            r = c.post(
                "/api/labels", json={"item_id": it, "label": "relevant"}, headers={"X-CSRF-Token": csrf}
            )
            assert r.status_code == 200
    # a session cookie older than max_age is refused even though its signature is good
    short = create_app(WebConfig(db_url=app.state.config.db_url, secret_key="k" * 43, session_max_age=0))
    with TestClient(short) as c:
        c.cookies.set("fireval_session", good)
        import time

        time.sleep(1.1)
        r = c.post("/api/labels", json={"item_id": it, "label": "relevant"}, headers={"X-CSRF-Token": csrf})
        assert r.status_code == 403
