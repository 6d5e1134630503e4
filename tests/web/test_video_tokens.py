"""Follow-ups of the security review of the annotation app (issue 13): videos by opaque
per-session tokens, no file identity in the video route's headers, login throttling that is no
lockout per account. Each test failed on the code before the fix:

- the annotation page, its JSON (``/api/next``, ``/api/labels``' next item, ``/api/history``,
  ``/api/peek``) and its video URLs gave the dataset's video id (``data-video-id``, "Video:
  video7020", ``/videos/video7020.mp4``): MSR-VTT ids are public, so an annotator could look up
  the video's original caption (the instance label) and tell gold, pool and instance pairs apart;
- the video route sent Starlette's ``Last-Modified`` and ``ETag`` (an MD5 of the file's time and
  size, the same in every session): the file's time, and one identity of a file across items;
- ten failed logins naming an account locked that account out from every address, its owner's
  right token included: anyone who knew an annotator's name could keep them out.
"""

from __future__ import annotations

import hashlib
import re
from email.utils import formatdate

import pytest
from fastapi.testclient import TestClient
from helpers import csrf_from, login, sid_of_cookie, video_of_url, video_token_url
from test_annotation_ux import post_json

from fireval.judging.gold import GoldPair
from fireval.judging.pool import PoolItem
from fireval.judging.store import Store
from fireval.web.app import WebConfig, create_app

MP4 = b"\x00\x00\x00\x18ftypmp42" + bytes(range(256)) * 8
IDS = ("video7020", "video1234", "video0042")  # public-looking ids: none may reach an annotator
GOLD_VIDEO = "video9999"
ID_RE = re.compile(r"video\d{4}")


@pytest.fixture
def env(tmp_path):  # type: ignore[no-untyped-def]
    db = f"sqlite:///{tmp_path / 'v.db'}"
    st = Store(db)
    st.add_items(
        [PoolItem(f"caption {k}", [f"c{k}"], vid, {"RUN": 1}) for k, vid in enumerate(IDS)]
        + [PoolItem("a traversal", ["c9"], "../secret", {"RUN": 1})],
        "T",
    )
    st.gold.load([GoldPair("gold caption", GOLD_VIDEO, "relevant")])
    tokens = {
        n: st.add_annotator(n, r)[1]
        for n, r in (("ann", "annotator"), ("ann2", "annotator"), ("boss", "admin"))
    }
    st.close()
    videos = tmp_path / "videos"
    videos.mkdir()
    for vid in (*IDS, GOLD_VIDEO):
        (videos / f"{vid}.mp4").write_bytes(MP4)
    (tmp_path / "secret.mp4").write_bytes(b"top secret")
    app = create_app(WebConfig(db_url=db, video_dir=videos, dataset="T", gold_rate=0.25))
    return app, tokens, videos


def _player(html: str) -> str:
    m = re.search(r'<video id="player"[^>]*?\ssrc="([^"#]*)', html)
    assert m, "no player"
    return m.group(1)


def test_token_round_trip_per_session_fixed_length() -> None:
    from fireval.judging.blinding import VideoTokens

    t = VideoTokens("a server secret")
    seen = set()
    for vid in ("video7020", "v", "video1", "x" * 30, "é/../ü", "a b#c?d"):
        tok = t.encode("sid-a", vid)
        assert re.fullmatch(r"[A-Za-z0-9_-]{64}", tok), tok  # ids up to 30 bytes: one length
        assert vid not in tok and t.decode("sid-a", tok) == vid
        assert t.encode("sid-a", vid) == tok  # stable in the session (the browser cache works)
        assert t.decode("sid-b", tok) is None  # another session, another annotator
        assert VideoTokens("another secret").decode("sid-a", tok) is None
        for k in range(len(tok)):  # any edited character is refused
            assert t.decode("sid-a", tok[:k] + ("A" if tok[k] != "A" else "B") + tok[k + 1 :]) is None
        seen.add(tok)
    assert len(seen) == 6
    assert len(t.encode("s", "y" * 31)) > 64  # longer ids: longer tokens, still decodable
    assert t.decode("s", t.encode("s", "y" * 200)) == "y" * 200
    for bad in ("video7020.mp4", "", "A" * 64, "A" * 63, "=" * 64, "é" * 64, None, 7, "A" * 5000):
        assert t.decode("sid-a", bad) is None
    with pytest.raises(ValueError):
        t.encode("s", "")


def test_annotator_sees_no_video_id_or_file_name(env) -> None:
    app, tokens, _ = env
    bodies: list[str] = []
    urls: list[str] = []
    with TestClient(app) as c:
        tok = login(c, tokens["ann"])
        for _ in range(len(IDS) + 2):
            page = c.get("/annotate")
            if 'id="player"' not in page.text:
                break
            url = _player(page.text)
            urls.append(url)
            peek = c.get("/api/peek")
            nxt = c.get("/api/next").json()["item"]
            assert set(nxt) == {"id", "caption", "video_url"} and nxt["video_url"] == url
            video = c.get(url)  # the player's request
            assert video.status_code in (200, 404)  # 404: the item whose id points outside
            bodies += [page.text, peek.text, c.get("/api/history").text, str(dict(video.headers))]
            r = post_json(c, "/api/labels", tok, {"item_id": nxt["id"], "label": "relevant", "next": True})
            assert r.status_code == 200, r.text
            bodies.append(r.text)
        assert len(urls) >= 4  # the pool items and the gold item
        for url in urls:
            assert re.fullmatch(r"/videos/[A-Za-z0-9_-]{64}", url), url
        for b in bodies + urls:
            assert not ID_RE.search(b), ID_RE.search(b)
            assert ".mp4" not in b and "secret" not in b and "data-video-id" not in b
        # the admin still sees ids and can open the files by name
        login(c, tokens["boss"])
        assert c.get("/videos/video7020.mp4").content == MP4


def test_tokens_are_per_session_and_stay_in_the_video_directory(env) -> None:
    app, tokens, _ = env
    with TestClient(app) as a, TestClient(app) as b:
        login(a, tokens["ann"])
        login(b, tokens["ann2"])
        url = _player(a.get("/annotate").text)
        assert a.get(url).content == MP4
        assert b.get(url).status_code == 404  # not ann2's token
        assert a.get("/videos/video7020.mp4").status_code == 404  # a file name: admins only
        assert a.get("/videos/..%2Fsecret.mp4").status_code == 404
        sid = a.cookies.get("fireval_session")
        # a token that decodes to an id naming a file outside the directory: still refused
        evil = "/videos/" + app.state.video_tokens.encode(sid_of_cookie(sid), "../secret")
        r = a.get(evil)
        assert r.status_code == 404 and b"top secret" not in r.content
        a.post("/logout", data={"csrf_token": csrf_from(a.get("/annotate").text)})
        assert a.get(url).status_code == 401  # the token dies with the session's login


def test_video_headers_name_and_date_nothing_and_ranges_work(env) -> None:
    app, tokens, videos = env
    with TestClient(app) as a, TestClient(app) as b:
        login(a, tokens["ann"])
        login(b, tokens["ann2"])
        url_a = _player(a.get("/annotate").text)
        r = a.get(url_a)
        shown = videos / f"{video_of_url(a, url_a)}.mp4"  # a pool item's or the gold item's
        st = shown.stat()
        starlette_etag = hashlib.md5(f"{st.st_mtime}-{st.st_size}".encode()).hexdigest()
        assert r.status_code == 200 and r.content == MP4
        assert "last-modified" not in r.headers and "content-disposition" not in r.headers
        assert starlette_etag not in r.headers.get("etag", "")
        assert formatdate(st.st_mtime, usegmt=True) not in str(dict(r.headers))
        assert r.headers["cache-control"] == "private, max-age=3600"
        assert r.headers["accept-ranges"] == "bytes" and r.headers["content-type"] == "video/mp4"
        etag = r.headers["etag"]
        assert re.fullmatch(r'"[0-9a-f]{24}"', etag)
        # the same file in another session: another tag
        url_b = video_token_url(b, video_of_url(a, url_a))
        assert url_b != url_a and b.get(url_b).content == MP4
        assert b.get(url_b).headers["etag"] != etag
        # ranges for the player; If-Range with this tag keeps the range, anything else the whole file
        part = a.get(url_a, headers={"Range": "bytes=2-5"})
        assert part.status_code == 206 and part.content == MP4[2:6]
        assert part.headers["content-range"] == f"bytes 2-5/{len(MP4)}"
        assert a.get(url_a, headers={"Range": "bytes=2-5", "If-Range": etag}).status_code == 206
        for other in ('"0123"', f'"{starlette_etag}"', f"W/{etag}", formatdate(st.st_mtime, usegmt=True)):
            full = a.get(url_a, headers={"Range": "bytes=2-5", "If-Range": other})
            assert full.status_code == 200 and full.content == MP4, other
        assert a.get(url_a, headers={"Range": f"bytes={len(MP4) + 5}-"}).status_code == 416
        head = a.head(url_a)
        assert head.status_code == 200 and head.headers["content-length"] == str(len(MP4))
        # the tag changes with the file (a resumed download of a changed file is not spliced)
        shown.write_bytes(MP4 + b"more")
        assert a.get(url_a).headers["etag"] != etag


# ---------------------------------------------------------------------- login throttling
def _login(app, token: str, addr: str, name: str = "") -> int:  # type: ignore[no-untyped-def]
    with TestClient(app, client=(addr, 5000)) as c:
        data = {"token": token, "csrf_token": csrf_from(c.get("/login").text)}
        if name:
            data["name"] = name
        return c.post("/login", data=data, follow_redirects=False).status_code


def test_failures_naming_an_account_do_not_lock_its_owner_out(env) -> None:
    app, tokens, _ = env
    # an attacker fails again and again naming "ann", from many addresses and from one
    for k in range(30):
        assert _login(app, f"guess-{k}", f"198.51.100.{k}", name="ann") == 401, k  # a first try each
    codes = [_login(app, f"guess-{k}", "203.0.113.5", name="ann") for k in range(12)]
    assert codes[:5] == [401] * 5 and set(codes[5:]) == {429}  # per (account, address): 5
    # ann, from her own address, gets in: with and without her name
    assert _login(app, tokens["ann"], "192.0.2.10", name="ann") == 303
    assert _login(app, tokens["ann"], "192.0.2.11") == 303
    # the attacker's address stays throttled for ann, right token or not
    assert _login(app, tokens["ann"], "203.0.113.5", name="ann") == 429


def test_per_address_limit_bounds_guessing(env) -> None:
    app, tokens, _ = env
    # naming another account does not reset the count: the address has 10 tries in all
    codes = [_login(app, f"g{k}", "203.0.113.9", name=f"user{k % 3}") for k in range(10)]
    assert codes == [401] * 10
    assert _login(app, "g", "203.0.113.9") == 429
    assert _login(app, tokens["ann2"], "203.0.113.9") == 429  # a right token waits too
    assert _login(app, tokens["ann2"], "203.0.113.10") == 303
    # an IPv6 host holds a whole /64: its addresses count together
    for k in range(10):
        assert _login(app, f"g{k}", f"2001:db8:0:7::{k + 1:x}") == 401
    assert _login(app, tokens["ann"], "2001:db8:0:7::ffff") == 429
    assert _login(app, tokens["ann"], "2001:db8:0:8::1") == 303


def test_throttle_keys() -> None:
    from fireval.web.security import LoginThrottle

    key = LoginThrottle.address
    assert key("2001:db8::1") == key("2001:db8::ffff:1") == "2001:db8::/64"
    assert key("::ffff:203.0.113.1") == "203.0.113.1" == key("203.0.113.1")
    assert key(None) == "-" and key("testclient") == "testclient"
    lim = LoginThrottle(per_address=4, per_account_address=2, window=60.0)
    lim.failed("192.0.2.1", "ann")
    lim.failed("192.0.2.1", "ann")
    assert lim.retry_after("192.0.2.1", "ann") > 0
    assert lim.retry_after("192.0.2.1", "bob") == lim.retry_after("192.0.2.1") == 0
    assert lim.retry_after("192.0.2.2", "ann") == 0  # no lock on the account alone
    lim.failed("192.0.2.1", "bob")
    lim.failed("192.0.2.1")
    assert lim.retry_after("192.0.2.1", "carol") > 0  # the address's own limit
