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
    value = client.cookies.get("fireval_session")
    assert value, "not logged in"
    return sid_of_cookie(value)


def sid_of_cookie(value: str) -> str:
    """The server-side session id inside a ``fireval_session`` cookie's value (tests only)."""
    import json
    from base64 import b64decode

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


def video_token_url(client, video_id: str) -> str:
    """The ``/videos/<token>`` URL the server gives ``video_id`` in ``client``'s session (tests
    only: a real annotator gets video URLs only from the page)."""
    return "/videos/" + str(client.app.state.video_tokens.encode(session_sid(client), video_id))


def video_of_url(client, url: str) -> str:
    """The video id behind a video URL ``client``'s session was given: a ``/videos/<token>``
    decoded with the server's secret (fails if it is not a token of this session), or the last
    path segment without its extension for a URL template's ``/media/<id>.mp4``."""
    return video_in_session(client.app, session_sid(client), url)


def video_in_session(app, sid: str, url: str) -> str:
    """:func:`video_of_url` for session ``sid`` of ``app`` (a browser's or another client's)."""
    from urllib.parse import unquote

    path = url.split("#")[0]
    if "/videos/" in path:
        got = app.state.video_tokens.decode(sid, path.split("/videos/", 1)[1])
        assert got is not None, f"not a video token of this session: {url!r}"
        return str(got)
    return unquote(path.rsplit("/", 1)[1]).rsplit(".", 1)[0]


def player_src(html: str) -> str:
    """The ``src`` of the annotation page's player."""
    m = re.search(r'<video id="player"[^>]*?\ssrc="([^"]*)"', html)
    assert m, "no player on the page"
    return m.group(1)


def video_shown(client, html: str) -> str:
    """The video id of the annotation page's player (see :func:`video_of_url`)."""
    return video_of_url(client, player_src(html))
