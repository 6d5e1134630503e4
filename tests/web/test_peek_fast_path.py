"""``GET /api/peek`` answered before the middleware stack (``FirevalApp.fast_peek``) against the
full stack (``fast_peek = None``): the same status, body and headers for every request, and the
fast path really taken (one worker-thread call or one statement, no dependency threads)."""

from __future__ import annotations

import sqlite3

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient
from helpers import login
from test_annotate_prefetch import _answer, _app, _shown
from test_annotation_ux import db_url  # noqa: F401  (fixture)
from test_label_fast_path import HEADERS


def _both(c: TestClient) -> tuple[tuple[int, bytes, dict[str, str | None]], ...]:
    """The answer to ``GET /api/peek`` through the fast path and through the full stack."""
    out = []
    saved = c.app.fast_peek
    assert saved is not None
    for fast in (saved, None):
        c.app.fast_peek = fast
        try:
            r = c.get("/api/peek")
        finally:
            c.app.fast_peek = saved
        out.append((r.status_code, r.content, {h: r.headers.get(h) for h in HEADERS}))
    return tuple(out)


def _same(c: TestClient) -> tuple[int, bytes]:
    fast, full = _both(c)
    assert fast == full
    return fast[0], fast[1]


def test_fast_and_full_stack_answer_alike(db_url, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    app, tokens, _ = _app(db_url, n_items=3)
    store = app.state.store
    calls: list[str] = []
    for name in ("peek_in_session", "peek_next_async"):
        real = getattr(store, name)

        def spy(*a, _real=real, _name=name, **k):  # type: ignore[no-untyped-def]
            calls.append(_name + (" on loop" if k.get("on_loop") else ""))
            return _real(*a, **k)

        monkeypatch.setattr(store, name, spy)
    with TestClient(app) as c:
        assert _same(c)[0] == 401  # no cookie
        c.cookies.set("fireval_session", "not-a-signed-cookie")
        assert _same(c)[0] == 401
        c.cookies.clear()
        login(c, tokens["ann"])
        assert _same(c) == (200, b'{"video_url":null}')  # nothing shown yet: nothing follows
        assert calls, "the fast path did not run"
        calls.clear()
        _shown(c)
        assert _same(c) == (200, b'{"video_url":"/media/v1.mp4"}')
        # one call on the fast path; on SQLite the full stack calls neither (it calls peek_next
        # in a worker thread after its session dependency), on PostgreSQL its route also
        # takes the one-statement path
        assert len(calls) == (1 if db_url.startswith("sqlite") else 2), calls
        # SQLite: on the event loop itself (its reads never wait for a writer), no thread hop
        assert calls[0] == ("peek_in_session on loop" if db_url.startswith("sqlite") else "peek_next_async")
        assert _answer(c, 1).status_code == 303
        _shown(c)
        assert _same(c) == (200, b'{"video_url":"/media/v2.mp4"}')
        assert _answer(c, 2).status_code == 303
        _shown(c)
        assert _same(c) == (200, b'{"video_url":null}')  # the last item: nothing after it
        cookie = c.cookies.get("fireval_session")
        c.post("/logout", data={"csrf_token": c.get("/api/session").json()["csrf_token"]})
        c.cookies.set("fireval_session", cookie)  # the old cookie of a session that ended
        assert _same(c)[0] == 401


def test_prefetch_off_alike(tmp_path) -> None:
    app, tokens, _ = _app(f"sqlite:///{tmp_path / 'p.db'}", prefetch=False)
    with TestClient(app) as c:
        assert _same(c)[0] == 401
        login(c, tokens["ann"])
        _shown(c)
        assert _same(c) == (200, b'{"video_url":null}')


def test_store_unavailable_alike(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    app, tokens, _ = _app(f"sqlite:///{tmp_path / 'u.db'}")
    with TestClient(app, raise_server_exceptions=False) as c:
        login(c, tokens["ann"])
        _shown(c)
        store = app.state.store

        def broken(*a, **k):  # type: ignore[no-untyped-def]
            raise sa.exc.OperationalError("SELECT", {}, sqlite3.OperationalError("disk I/O error"))

        monkeypatch.setattr(store, "_peek", broken)  # both paths read through it
        status, body = _same(c)
        assert status == 503 and b"unavailable" in body
