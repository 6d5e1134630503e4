"""Issue 11, item 2: sessions live on the server, so logout and revocation end them at once;
login attempts are rate limited per client address and per account.

A "stolen" cookie is a copy of the session cookie taken before the event; after logout, token
rotation, disabling the annotator or an admin's action it must not read or write anything.
"""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient

from fireval.cli import main
from fireval.judging.pool import PoolItem
from fireval.judging.store import Store
from fireval.web.app import WebConfig, create_app

CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')


@pytest.fixture
def env(tmp_path):
    db = f"sqlite:///{tmp_path / 's.db'}"
    st = Store(db)
    st.add_items([PoolItem(f"caption {i}", [f"c{i}"], f"v{i}", {"A": 1}) for i in range(6)], "T")
    tokens = {
        name: st.add_annotator(name, role)[1] for name, role in (("ann", "annotator"), ("boss", "admin"))
    }
    st.close()
    return create_app(WebConfig(db_url=db)), tokens, db


def login(c: TestClient, token: str, name: str | None = None) -> int:
    page = c.get("/login")
    data = {"token": token, "csrf_token": CSRF.search(page.text).group(1)}
    if name is not None:
        data["name"] = name
    return c.post("/login", data=data, follow_redirects=False).status_code


def session(c: TestClient) -> tuple[dict[str, str], str, str]:
    """What an attacker could have copied while the session lived: the session cookie, the CSRF
    header value and an item handle from the page (annotators name items only by handles of
    their session, so a raw id would be refused as an unknown item whatever the session)."""
    item = c.get("/api/next").json()["item"]
    assert item is not None and isinstance(item["id"], str)
    return dict(c.cookies), c.get("/api/session").json()["csrf_token"], item["id"]


def can_use(app, cookies: dict[str, str], csrf: str, handle: str) -> tuple[int, int]:
    """(GET /api/next, POST /api/labels) statuses for a client holding only ``cookies``; the
    write answers the item the read gives or, when the read is refused, the copied ``handle``
    (a valid handle of this session, so only a dead session can refuse it)."""
    with TestClient(app, cookies=cookies) as thief:
        read = thief.get("/api/next")
        item = read.json()["item"]["id"] if read.status_code == 200 and read.json()["item"] else handle
        before = app.state.store.votes()["label_id"].size
        write = thief.post(
            "/api/labels", json={"item_id": item, "label": "relevant"}, headers={"X-CSRF-Token": csrf}
        )
        if write.status_code != 200:
            assert app.state.store.votes()["label_id"].size == before  # a refused write stored nothing
        return read.status_code, write.status_code


def test_logout_ends_every_copy_of_the_session(env) -> None:
    app, tokens, _ = env
    with TestClient(app) as c:
        assert login(c, tokens["ann"]) == 303
        cookies, csrf, item = session(c)
        assert can_use(app, cookies, csrf, item) == (200, 200)  # the copy works while the session lives
        assert c.post("/logout", data={"csrf_token": csrf}, follow_redirects=False).status_code == 303
        assert can_use(app, cookies, csrf, item) == (401, 401)
        assert c.get("/api/next").status_code == 401


def test_rotate_token_disable_enable_from_the_cli(env, capsys) -> None:
    app, tokens, db = env
    with TestClient(app) as c:
        assert login(c, tokens["ann"]) == 303
        cookies, csrf, item = session(c)
        with pytest.raises(SystemExit) as ex:
            main(["judgments", "rotate-token", "ann", "--db", db])
        assert ex.value.code in (0, None)
        name, role, new_token = capsys.readouterr().out.strip().split("\t")
        assert (name, role) == ("ann", "annotator") and new_token != tokens["ann"]
        assert can_use(app, cookies, csrf, item) == (401, 401)  # revoked at once
    with TestClient(app) as c:
        assert login(c, tokens["ann"]) == 401  # the old token is dead
        assert login(c, new_token) == 303
        cookies, csrf, item = session(c)
        with pytest.raises(SystemExit) as ex:
            main(["judgments", "disable", "ann", "--db", db])
        assert ex.value.code in (0, None)
        assert can_use(app, cookies, csrf, item) == (401, 401)
    with TestClient(app) as c:
        assert login(c, new_token) == 401  # disabled: no login
        with pytest.raises(SystemExit):
            main(["judgments", "enable", "ann", "--db", db])
        assert can_use(app, cookies, csrf, item) == (401, 401)  # enabling does not revive old sessions
        assert login(c, new_token) == 303
        assert can_use(app, *session(c)) == (200, 200)  # one label given
    capsys.readouterr()
    with pytest.raises(SystemExit) as ex:
        main(["judgments", "annotators", "--db", db])
    assert ex.value.code in (0, None)
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].split("\t") == ["name", "role", "enabled", "labels", "sessions"]
    rows = {ln.split("\t")[0]: ln.split("\t")[1:] for ln in lines[1:]}
    assert rows["ann"][:3] == ["annotator", "yes", "1"] and rows["boss"][:2] == ["admin", "yes"]
    with pytest.raises(SystemExit) as ex:
        main(["judgments", "disable", "nobody", "--db", db])
    assert ex.value.code == 2 and "unknown annotator 'nobody'" in capsys.readouterr().err


@pytest.mark.parametrize("action", ["revoke", "rotate", "disable"])
def test_admin_page_actions_revoke_at_once(env, action: str) -> None:
    app, tokens, _ = env
    st = app.state.store
    ann_id = next(a.id for a in st.annotators() if a.name == "ann")
    with TestClient(app) as victim, TestClient(app) as admin:
        assert login(victim, tokens["ann"]) == 303
        cookies, csrf, item = session(victim)
        assert login(admin, tokens["boss"]) == 303
        admin_csrf = admin.get("/api/session").json()["csrf_token"]
        page = admin.get("/admin").text
        assert f'action="/admin/annotators/{ann_id}/{action}"' in page
        # without the CSRF field the action is refused and changes nothing
        assert admin.post(f"/admin/annotators/{ann_id}/{action}").status_code == 403
        assert can_use(app, cookies, csrf, item)[0] == 200
        r = admin.post(f"/admin/annotators/{ann_id}/{action}", data={"csrf_token": admin_csrf})
        assert r.status_code == 200
        assert can_use(app, cookies, csrf, item) == (401, 401)
        if action == "rotate":
            assert 'id="new-token"' in r.text and login(victim, tokens["ann"]) == 401
        if action == "disable":
            assert login(victim, tokens["ann"]) == 401
            r = admin.post(f"/admin/annotators/{ann_id}/enable", data={"csrf_token": admin_csrf})
            assert r.status_code == 200 and login(victim, tokens["ann"]) == 303
        # an admin cannot lock themselves out by accident
        boss_id = next(a.id for a in st.annotators() if a.name == "boss")
        assert (
            admin.post(f"/admin/annotators/{boss_id}/disable", data={"csrf_token": admin_csrf}).status_code
            == 409
        )
        # annotators cannot use the admin actions
        assert victim.post(f"/admin/annotators/{boss_id}/revoke", data={"csrf_token": "x"}).status_code in (
            401,
            403,
        )


def test_login_rate_limited_per_client_address(env) -> None:
    app, tokens, _ = env
    with TestClient(app, client=("203.0.113.7", 5000)) as c:
        codes = [login(c, f"wrong-{i}") for i in range(200)]
        assert codes[:10] == [401] * 10 and set(codes[10:]) == {429}
        page = c.get("/login")
        r = c.post("/login", data={"token": tokens["ann"], "csrf_token": CSRF.search(page.text).group(1)})
        assert r.status_code == 429  # even a right token waits: the address is throttled
        assert 1 <= int(r.headers["retry-after"]) <= 60 and "Too many failed attempts" in r.text
    with TestClient(app, client=("203.0.113.8", 5000)) as other:
        assert login(other, tokens["ann"]) == 303  # another address is not affected


def test_login_rate_limited_per_account_and_address(env) -> None:
    app, tokens, _ = env
    # ten addresses each try one wrong token naming the account "ann": no lock on the account
    # alone (it would let anyone who knows the name keep ann out; tests/web/test_video_tokens.py)
    for k in range(10):
        with TestClient(app, client=(f"198.51.100.{k}", 5000)) as c:
            assert login(c, f"guess-{k}", name="ann") == 401
    with TestClient(app, client=("198.51.100.200", 5000)) as c:
        assert login(c, tokens["ann"]) == 303  # ann gets in from another address
    with TestClient(app, client=("198.51.100.0", 5000)) as c:  # one address naming "ann" again
        assert [login(c, f"more-{k}", name="ann") for k in range(5)] == [401] * 4 + [429]
        assert login(c, tokens["ann"], name="ann") == 429  # that address may not name ann for now
        assert login(c, tokens["boss"]) == 303  # other accounts are not affected


def test_limiter_window_slides() -> None:
    from fireval.web.security import LoginLimiter

    lim = LoginLimiter(max_failures=3, window=60.0)
    for _ in range(3):
        lim.failed("ip:a")
    assert 1 <= lim.retry_after("ip:a") <= 60 and lim.retry_after("ip:b") == 0
    lim._fails["ip:a"] = type(lim._fails["ip:a"])(t - 61.0 for t in lim._fails["ip:a"])  # a minute later
    assert lim.retry_after("ip:a") == 0
    small = LoginLimiter(max_failures=1, window=60.0, max_keys=5)
    for k in range(50):
        small.failed(f"ip:{k}")
    assert len(small._fails) == 5  # bounded memory under a flood of addresses
