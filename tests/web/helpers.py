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
