"""Web hardening of issue 26 (item 10, and item 5's proxy headers).

- ``POST /explore/queue`` checks every field before it writes: a bad ``back=`` is 422 and
  queues nothing (it used to add the pairs, then answer 422).
- A body over ``max_body_bytes`` is 413 whether it declares its length or comes chunked (a
  chunked one used to get FastAPI's 400), on the app and on the ``/api/labels`` fast path, and
  every 413 carries the security headers.
- uvicorn believes ``X-Forwarded-For`` only from proxies named with ``--forwarded-allow-ips``
  (its own default trusts loopback, where a rotated header escaped the login throttle).
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from fastapi.testclient import TestClient

from fireval.core import Collection, Run
from fireval.judging.store import Store
from fireval.web.app import WebConfig, create_app

CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')
SECURITY = ("content-security-policy", "x-frame-options", "x-content-type-options")


def _login(c: TestClient, token: str) -> str:
    page = c.get("/login")
    r = c.post(
        "/login", data={"token": token, "csrf_token": CSRF.search(page.text).group(1)}, follow_redirects=False
    )
    assert r.status_code == 303
    return str(c.get("/api/session").json()["csrf_token"])


@pytest.fixture()
def app_and_admin(tmp_path):
    pairs = [("c0", "v0", "a man plays guitar"), ("c1", "v1", "a dog runs"), ("c2", "v2", "a cat sleeps")]
    coll = Collection.from_pairs("toy", pairs)
    runs = {"A": Run("A", scores=np.array([[0.9, 0.8, 0.1], [0.1, 0.9, 0.3], [0.2, 0.1, 0.8]]))}
    url = f"sqlite:///{tmp_path / 'store.db'}"
    st = Store(url)
    _, admin = st.add_annotator("boss", "admin")
    st.close()
    cfg = WebConfig(
        db_url=url,
        dataset="toy",
        collection=coll,
        runs=runs,
        judgments=coll.instance_judgments(),
        max_body_bytes=2048,
    )
    cfg.extra["explore_k"] = 2
    return create_app(cfg), admin


@pytest.mark.parametrize("back", ["abc", "-1", "99", "1e3"])
def test_queue_with_a_bad_back_writes_nothing(app_and_admin, back):
    app, admin = app_and_admin
    with TestClient(app) as c:
        tok = _login(c, admin)
        r = c.post(
            "/explore/queue", data={"pair": "0:1", "back": back, "csrf_token": tok}, follow_redirects=False
        )
        assert r.status_code == 422, r.text
        assert app.state.store.items_table() == []
        ok = c.post(
            "/explore/queue", data={"pair": "0:1", "back": "0", "csrf_token": tok}, follow_redirects=False
        )
        assert ok.status_code == 303 and len(app.state.store.items_table()) == 1


def _chunks(n: int, size: int = 1024):
    for _ in range(n):
        yield b"x" * size


def test_oversized_bodies_are_413_with_security_headers(app_and_admin):
    app, admin = app_and_admin
    with TestClient(app) as c:
        tok = _login(c, admin)
        answers = [
            c.post(
                "/explore/queue",
                content=b"pair=0:1&" + b"x" * 5000,
                headers={"content-type": "application/x-www-form-urlencoded"},
            ),
            c.post(
                "/explore/queue",
                content=_chunks(8),
                headers={"content-type": "application/x-www-form-urlencoded"},
            ),
            c.post(
                "/api/labels",
                content=_chunks(8),
                headers={"content-type": "application/json", "x-csrf-token": tok},
            ),
            c.post(
                "/api/labels",
                content=b"{" + b" " * 5000 + b"}",
                headers={"content-type": "application/json", "x-csrf-token": tok},
            ),
            c.post(
                "/login", content=_chunks(8), headers={"content-type": "application/x-www-form-urlencoded"}
            ),
        ]
        for r in answers:
            assert r.status_code == 413, (r.status_code, r.text)
            for h in SECURITY:
                assert h in r.headers, (h, dict(r.headers))
        assert app.state.store.items_table() == []
        assert c.get("/api/session").status_code == 200  # the app still answers


def test_proxy_headers_believed_only_from_named_proxies():
    import uvicorn
    from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

    from fireval.web.workers import _uvicorn_options

    async def app(scope, receive, send):  # pragma: no cover - never called
        pass

    default = uvicorn.Config(app, **_uvicorn_options("warning"))
    default.load()
    assert not isinstance(default.loaded_app, ProxyHeadersMiddleware)
    named = uvicorn.Config(app, **_uvicorn_options("warning", "10.0.0.1"))
    named.load()
    assert isinstance(named.loaded_app, ProxyHeadersMiddleware)
    assert _uvicorn_options("warning", "10.0.0.1")["forwarded_allow_ips"] == "10.0.0.1"
