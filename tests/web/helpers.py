"""Shared helpers for the web tests: log in through the real forms and read the CSRF token."""

from __future__ import annotations

import re

CSRF_RE = re.compile(r'name="csrf_token" value="([^"]+)"')


def csrf_from(html: str) -> str:
    m = CSRF_RE.search(html)
    assert m, "no CSRF field in page"
    return m.group(1)


def login(client, token: str) -> str:
    """Log in with ``token``; return the session's CSRF token."""
    page = client.get("/login")
    r = client.post(
        "/login", data={"token": token, "csrf_token": csrf_from(page.text)}, follow_redirects=False
    )
    assert r.status_code == 303, r.text
    return client.get("/api/session").json()["csrf_token"]


def session_sid(client) -> str:
    """The server-side session id inside ``client``'s signed session cookie (tests only: the
    page never shows it)."""
    import json
    from base64 import b64decode

    value = client.cookies.get("fireval_session")
    assert value, "not logged in"
    return str(json.loads(b64decode(value.split(".")[0]))["sid"])


def handle(client, item_id: int) -> str:
    """The handle the server gives ``item_id`` in ``client``'s session (tests only: a real
    annotator gets handles only from the page)."""
    return str(client.app.state.handles.encode(session_sid(client), int(item_id)))


def raw_id(client, item_handle: str) -> int:
    """The store's id behind a handle the page gave ``client`` (fails if it is not one)."""
    got = client.app.state.handles.decode(session_sid(client), item_handle)
    assert got is not None, f"not a handle of this session: {item_handle!r}"
    return int(got)


def label_of(client, answer: str) -> int:
    """The ``labels`` row id behind an answer handle ``client``'s session got (tests only: the
    annotator sees only the handle; fails for a gold answer or a foreign handle)."""
    from fireval.web.handles import answer_row

    code = client.app.state.answer_handles.decode(session_sid(client), answer)
    assert code is not None, f"not an answer handle of this session: {answer!r}"
    row, gold = answer_row(code)
    assert not gold, "a gold answer"
    return row
