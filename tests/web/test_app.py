"""The web app in-process: login, CSRF, roles, escaping, rejected requests, video serving."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from helpers import csrf_from, handle, login, raw_id, video_token_url

from fireval.judging.pool import PoolItem
from fireval.judging.store import Store
from fireval.web.app import WebConfig, create_app

EVIL = '<script>alert("x")</script> a man & a dog'


@pytest.fixture
def env(tmp_path):
    db = f"sqlite:///{tmp_path / 's.db'}"
    st = Store(db)
    st.add_items(
        [PoolItem(EVIL, ["c0"], "v0", {"A": 1}), PoolItem("a cat", ["c1"], "v1", {"A": 1}, double=True)], "T"
    )
    users = {
        name: st.add_annotator(name, role)
        for name, role in (("ann", "annotator"), ("ann2", "annotator"), ("boss", "admin"))
    }
    st.close()
    videos = tmp_path / "videos"
    videos.mkdir()
    (videos / "v0.mp4").write_bytes(b"\x00\x00\x00\x18ftypmp42")
    (tmp_path / "secret.txt").write_text("top secret")
    app = create_app(WebConfig(db_url=db, video_dir=videos, dataset="T", max_body_bytes=4096))
    return app, {k: v[1] for k, v in users.items()}, tmp_path


def n_labels(app) -> int:
    return int(app.state.store.votes()["label_id"].size)


def test_login_required_and_bad_token(env) -> None:
    app, tokens, _ = env
    with TestClient(app) as c:
        r = c.get("/annotate", headers={"accept": "text/html"}, follow_redirects=False)
        assert r.status_code == 303 and r.headers["location"] == "/login"
        assert c.get("/api/next").status_code == 401
        page = c.get("/login")
        r = c.post("/login", data={"token": "nope", "csrf_token": csrf_from(page.text)})
        assert r.status_code == 401 and "Unknown token" in r.text
        # login without the CSRF field is refused
        assert c.post("/login", data={"token": tokens["ann"]}).status_code == 403


def test_session_cookie_flags(env) -> None:
    app, tokens, _ = env
    with TestClient(app) as c:
        r = c.get("/login")
        cookie = r.headers["set-cookie"].lower()
        assert "httponly" in cookie and "samesite=strict" in cookie
    secure = create_app(WebConfig(db_url=app.state.config.db_url, secure_cookies=True))
    with TestClient(secure, base_url="https://testserver") as c:
        assert "secure" in c.get("/login").headers["set-cookie"].lower()


def test_annotate_page_escapes_caption_and_has_guideline(env) -> None:
    app, tokens, _ = env
    with TestClient(app) as c:
        login(c, tokens["ann"])
        html = c.get("/annotate").text  # pool order: the evil caption (item 1) comes first
        assert f'data-item-id="{handle(c, 1)}"' in html and 'data-item-id="1"' not in html
        assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt; a man &amp; a dog" in html
        assert "<script>alert" not in html
        assert "every element of the caption is present in the video" in html
        # poster frame at 0.1 s; the video by its session token, never its id or file name (blind)
        assert f'src="{video_token_url(c, "v0")}#t=0.1"' in html and "v0" not in html
        r = c.get("/annotate")
        assert "script-src 'self'" in r.headers["content-security-policy"]


def test_label_api_idempotent_and_rejections(env) -> None:
    app, tokens, _ = env
    with TestClient(app) as c:
        csrf = login(c, tokens["ann"])
        item = c.get("/api/next").json()["item"]
        h = {"X-CSRF-Token": csrf}
        ok = c.post(
            "/api/labels", json={"item_id": item["id"], "label": "relevant", "time_spent_ms": 900}, headers=h
        )
        assert ok.status_code == 200 and ok.json()["status"] == "created"
        dup = c.post("/api/labels", json={"item_id": item["id"], "label": "relevant"}, headers=h)
        assert dup.json()["status"] == "duplicate" and n_labels(app) == 1
        other = c.get("/api/next").json()["item"]
        before = n_labels(app)
        cases = [
            ({"item_id": handle(c, 9999), "label": "relevant"}, h, 404),  # unknown item
            ({"item_id": str(raw_id(c, other["id"])), "label": "relevant"}, h, 404),  # the store's id
            ({"item_id": raw_id(c, other["id"]), "label": "relevant"}, h, 404),  # an integer: not a handle
            ({"item_id": other["id"], "label": "maybe"}, h, 422),  # label outside the enum
            ({"item_id": other["id"], "label": "relevant"}, {}, 403),  # missing CSRF
            ({"item_id": other["id"], "label": "relevant"}, {"X-CSRF-Token": "forged"}, 403),  # forged CSRF
            ({"item_id": item["id"], "label": "irrelevant"}, h, 409),  # changed answer without undo
        ]
        for body, headers, status in cases:
            r = c.post("/api/labels", json=body, headers=headers)
            assert r.status_code == status, (body, r.status_code, r.text)
        assert n_labels(app) == before
        other_id = raw_id(c, other["id"])
        # oversized body
        r = c.post(
            "/api/labels",
            content=b"{" + b" " * 10_000 + b"}",
            headers={**h, "content-type": "application/json"},
        )
        assert r.status_code == 413 and n_labels(app) == before
    with TestClient(app) as c2:  # another annotator cannot label an item assigned to the first
        csrf2 = login(c2, tokens["ann2"])
        r = c2.post(
            "/api/labels", json={"item_id": other["id"], "label": "relevant"}, headers={"X-CSRF-Token": csrf2}
        )
        assert r.status_code == 404  # ann's handle means nothing in ann2's session
        r = c2.post(
            "/api/labels",
            json={"item_id": handle(c2, other_id), "label": "relevant"},
            headers={"X-CSRF-Token": csrf2},
        )
        assert other_id == 2 and r.status_code == 403  # claimed by ann, never by ann2
        assert r.json()["detail"] == f"item {handle(c2, 2)} is not assigned to you"  # never the raw id
        assert n_labels(app) == before


def test_csrf_token_bound_to_session(env) -> None:
    app, tokens, _ = env
    with TestClient(app) as a, TestClient(app) as b:
        csrf_a = login(a, tokens["ann"])
        login(b, tokens["ann2"])
        item = b.get("/api/next").json()["item"]
        r = b.post(
            "/api/labels", json={"item_id": item["id"], "label": "relevant"}, headers={"X-CSRF-Token": csrf_a}
        )
        assert r.status_code == 403 and n_labels(app) == 0


def test_form_flow_undo(env) -> None:
    app, tokens, _ = env
    with TestClient(app) as c:
        login(c, tokens["ann"])
        page = c.get("/annotate").text
        item_id = page.split('data-item-id="')[1].split('"')[0]
        csrf = csrf_from(page)
        r = c.post(
            "/annotate/label",
            data={"item_id": item_id, "label": "irrelevant", "csrf_token": csrf, "time_spent_ms": "10"},
            follow_redirects=False,
        )
        assert r.status_code == 303 and n_labels(app) == 1
        assert c.post("/annotate/undo", data={}, follow_redirects=False).status_code == 403
        r = c.post("/annotate/undo", data={"csrf_token": csrf}, follow_redirects=False)
        assert r.status_code == 303 and n_labels(app) == 0
        assert f'data-item-id="{item_id}"' in c.get("/annotate").text


def test_video_serving_blocks_traversal(env) -> None:
    """File names (admins' pages use them) stay inside the video directory; annotators get
    files by their session's tokens only."""
    app, tokens, tmp = env
    with TestClient(app) as c:
        assert c.get("/videos/v0.mp4").status_code == 401
        login(c, tokens["ann"])
        assert c.get(video_token_url(c, "v0")).content.startswith(b"\x00\x00\x00\x18ftyp")
        assert c.get("/videos/v0.mp4").status_code == 404  # a file name is no annotator's URL
        login(c, tokens["boss"])
        assert c.get("/videos/v0.mp4").content.startswith(b"\x00\x00\x00\x18ftyp")
        for bad in (
            "../secret.txt",
            "..%2Fsecret.txt",
            "%2e%2e/secret.txt",
            "sub/../../secret.txt",
            "%2Fetc%2Fpasswd",
            "..\\secret.txt",
            "nope.mp4",
        ):
            r = c.get(f"/videos/{bad}")
            assert r.status_code == 404, bad
            assert b"top secret" not in r.content
    (tmp / "videos" / "link.mp4").symlink_to(tmp / "secret.txt")
    (tmp / "videos" / "outside").symlink_to(tmp, target_is_directory=True)  # a directory link out
    (tmp / "videos" / "inside.mp4").symlink_to(tmp / "videos" / "v0.mp4")  # a link that stays inside
    with TestClient(app) as c:
        login(c, tokens["boss"])
        for bad in (
            "link.mp4",
            "outside/secret.txt",
            "outside%2Fsecret.txt",
            "%252e%252e%252fsecret.txt",
            "v0.mp4%00",
        ):
            r = c.get(f"/videos/{bad}")
            assert r.status_code == 404 and b"top secret" not in r.content, bad
        assert c.get("/videos/inside.mp4").content.startswith(b"\x00\x00\x00\x18ftyp")


def test_admin_role_adjudication_and_export(env) -> None:
    app, tokens, _ = env
    with TestClient(app) as a, TestClient(app) as b, TestClient(app) as boss:
        ha = {"X-CSRF-Token": login(a, tokens["ann"])}
        hb = {"X-CSRF-Token": login(b, tokens["ann2"])}
        assert a.get("/admin").status_code == 403
        assert a.get("/api/next").json()["item"]["id"] == handle(a, 1)
        # a skips item 1 (no vote) and is handed the double item 2 in the same call
        ia = a.post(
            "/api/labels", json={"item_id": handle(a, 1), "label": "skip", "next": True}, headers=ha
        ).json()["next"]
        ib = b.get("/api/next").json()["item"]  # a started item 2: it comes before the skipped item 1
        assert raw_id(a, ia["id"]) == raw_id(b, ib["id"]) == 2  # the double item goes to both
        assert ia["id"] != ib["id"]  # with a handle of its own in each session
        a.post("/api/labels", json={"item_id": ia["id"], "label": "relevant"}, headers=ha)
        b.post("/api/labels", json={"item_id": ib["id"], "label": "irrelevant"}, headers=hb)
        login(boss, tokens["boss"])
        page = boss.get("/admin").text
        assert 'id="dis-2"' in page
        # the adjudicator can watch the disputed video (QA: the cell used to be plain text)
        assert 'href="/videos/v1.mp4" target="_blank" rel="noopener" class="dis-video">v1</a>' in page
        csrf = csrf_from(page)
        assert boss.post("/admin/adjudicate", data={"item_id": 2, "label": "relevant"}).status_code == 403
        r = boss.post(
            "/admin/adjudicate",
            data={"item_id": 2, "label": "relevant", "csrf_token": csrf},
            follow_redirects=False,
        )
        assert r.status_code == 303
        assert "No open disagreements" in boss.get("/admin").text
        r = boss.post("/admin/annotators", data={"name": "carol", "csrf_token": csrf})
        assert r.status_code == 200 and "Token for <strong>carol</strong>" in r.text
        assert a.get("/admin/export").status_code == 403
        pytest.importorskip("fireval.formats.fire_json")
        # the CLI's export: run "A" and dataset "T" are outside the FIRE data model (issue 24)
        assert boss.get("/admin/export").status_code == 422
        app.state.config.model_names, app.state.config.dataset = {"A": "CLIP4CLIP"}, "MSRVTT"
        exp = boss.get("/admin/export")
        assert exp.status_code == 200
        import io
        import json
        import zipfile

        with zipfile.ZipFile(io.BytesIO(exp.content)) as zf:
            ann = json.loads(zf.read("fire_labels.json"))["annotations"]
        # the adjudication decides the label but is not a vote (issue 10): the votes stay a tie
        assert ann[0]["label"] == "relevant" and ann[0]["annotator_labels"] == ["relevant", "irrelevant"]


def test_video_url_template_and_csp(tmp_path) -> None:
    from fireval.web.app import video_url

    db = f"sqlite:///{tmp_path / 't.db'}"
    st = Store(db)
    st.add_items([PoolItem("a dog", ["c0"], "vid 1/x", {"A": 1})], "T")
    _, token = st.add_annotator("ann")
    st.close()
    cfg = WebConfig(db_url=db, video_url_template="https://media.example.org/msrvtt/{video_id}.mp4")
    assert video_url(cfg, "vid 1/x") == "https://media.example.org/msrvtt/vid%201%2Fx.mp4"
    app = create_app(cfg)
    with TestClient(app) as c:
        login(c, token)
        r = c.get("/annotate")
        assert 'src="https://media.example.org/msrvtt/vid%201%2Fx.mp4#t=0.1"' in r.text
        assert "media-src 'self' https://media.example.org" in r.headers["content-security-policy"]
        assert c.get("/videos/x.mp4").status_code == 404  # no video_dir configured


def test_every_state_changing_route_needs_the_csrf_token(env) -> None:
    """Enumerate the app's routes: no PUT/PATCH/DELETE, and every POST refuses a missing or
    forged token, whether the body is a form or JSON (a new route without CSRF fails here)."""
    app, tokens, _ = env
    methods = {m for r in app.routes for m in getattr(r, "methods", None) or ()}
    assert methods <= {"GET", "HEAD", "POST"}, methods
    posts = sorted(r.path for r in app.routes if "POST" in (getattr(r, "methods", None) or ()))
    assert {"/login", "/logout", "/annotate/label", "/api/labels", "/admin/annotators"} <= set(posts)
    with TestClient(app) as c:
        csrf = login(c, tokens["boss"])  # admin: the role check must not be what refuses
        item = c.get("/api/next").json()["item"]
        n_annotators = len(app.state.store.annotators())
        form = {"item_id": str(item["id"]), "label": "relevant", "name": "mallory", "token": tokens["ann"]}
        for path in posts:
            for kwargs in (
                {"data": form},
                {"data": {**form, "csrf_token": csrf + "x"}},
                {"json": {"item_id": item["id"], "label": "relevant"}},
                {"json": {"item_id": item["id"], "label": "relevant"}, "headers": {"X-CSRF-Token": "forged"}},
            ):
                r = c.post(path, follow_redirects=False, **kwargs)
                assert r.status_code == 403, (path, kwargs, r.status_code)
        assert n_labels(app) == 0 and len(app.state.store.annotators()) == n_annotators
        assert c.get("/api/session").json()["user"] == "boss"  # still logged in: /logout was refused


def test_admin_routes_refuse_annotators(env) -> None:
    app, tokens, _ = env
    with TestClient(app) as c:
        csrf = login(c, tokens["ann"])
        for path in ("/admin", "/admin/export", "/admin/status.json"):
            assert c.get(path).status_code == 403, path
        n_annotators = len(app.state.store.annotators())
        for path, data in (
            ("/admin/annotators", {"name": "mallory", "role": "admin"}),
            ("/admin/adjudicate", {"item_id": "1", "label": "relevant"}),
            ("/explore/queue", {"pair": "0:0"}),
        ):
            r = c.post(path, data={**data, "csrf_token": csrf}, follow_redirects=False)
            assert r.status_code == 403, (path, r.status_code)
        assert len(app.state.store.annotators()) == n_annotators and n_labels(app) == 0


def test_pages_with_tokens_are_not_cached(env) -> None:
    app, tokens, _ = env
    with TestClient(app) as c:
        csrf = login(c, tokens["boss"])
        r = c.post("/admin/annotators", data={"name": "carol", "csrf_token": csrf})
        assert r.status_code == 200 and "carol" in r.text
        assert r.headers["cache-control"] == "no-store"  # the new login token is on this page
        assert c.get("/api/session").headers["cache-control"] == "no-store"  # the CSRF token
        assert c.get("/login").headers["cache-control"] == "no-store"
        assert "no-store" not in c.get("/static/style.css").headers.get("cache-control", "")
        assert "no-store" not in c.get(video_token_url(c, "v0")).headers.get("cache-control", "")


def test_form_errors_are_pages_for_browsers_and_json_for_scripts(env) -> None:
    app, tokens, _ = env
    with TestClient(app) as c:
        csrf = login(c, tokens["boss"])
        form = {"name": "<b>ann</b>", "csrf_token": csrf}
        assert c.post("/admin/annotators", data=form).status_code == 200
        html = {"accept": "text/html,application/xhtml+xml"}
        r = c.post("/admin/annotators", data=form, headers=html)  # the same name again
        assert r.status_code == 400 and r.headers["content-type"].startswith("text/html")
        assert (
            "annotator &#39;&lt;b&gt;ann&lt;/b&gt;&#39; already exists" in r.text and "<b>ann" not in r.text
        )
        r = c.post("/admin/adjudicate", data={"item_id": "x", "csrf_token": csrf}, headers=html)
        assert r.status_code == 422 and "item_id must be an integer" in r.text and "<h1>Error</h1>" in r.text
        r = c.post("/admin/annotators", data=form)  # a script (no text/html in Accept) gets JSON
        assert r.status_code == 400 and "already exists" in r.json()["detail"]
        r = c.post(
            "/api/labels",
            json={"item_id": handle(c, 999), "label": "relevant"},
            headers={**html, "X-CSRF-Token": csrf},
        )
        assert r.status_code == 404 and r.json() == {"detail": f"unknown item {handle(c, 999)}"}
