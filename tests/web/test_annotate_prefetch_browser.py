"""Prefetch of the next item's video in headless Chromium (real server, the app's CSP).

While an item is on screen the hidden ``#next-video`` loads the video of the item the hand-out
would give next; after the answer the next page's player gets that video from the browser's
cache (no bytes over the network, read from the DevTools events). When another annotator takes
the predicted item meanwhile, the next page shows what the server hands out. On the last item
nothing is prefetched. Conditions are polled from Python (``_wait_until``): the CSP forbids
``page.wait_for_function``'s eval.
"""

from __future__ import annotations

import base64
import re
from pathlib import Path
from typing import Any

import httpx
import pytest
from helpers import csrf_from, player_src, sid_of_cookie, video_in_session
from test_annotation_browser import _fits, _shoot
from test_explore_browser import _RECORD_JS, _serve, _wait_until

from fireval.judging.pool import PoolItem
from fireval.judging.store import Store
from fireval.web.app import WebConfig, create_app

pytestmark = pytest.mark.browser

NEXT = "document.getElementById('next-video')"


@pytest.fixture()
def campaign(tmp_path):  # type: ignore[no-untyped-def]
    url = f"sqlite:///{tmp_path / 'store.db'}"
    st = Store(url)
    st.add_items([PoolItem(f"caption {k}", [f"c{k}"], f"v{k}", {"RUN": 1}) for k in range(4)], "toy")
    tokens = {n: st.add_annotator(n)[1] for n in ("ann", "ann2")}
    st.close()
    videos = tmp_path / "videos"
    videos.mkdir()
    app = create_app(WebConfig(db_url=url, dataset="toy", video_dir=videos, video_ext=".webm", gold_rate=0))
    return app, tokens, videos


def _login(page: Any, token: str) -> Any:
    page.goto("/login")
    page.fill("input[name=token]", token)
    with page.expect_navigation():
        page.click("button[type=submit]")
    if page.locator("#btn-guidelines-seen").count():
        with page.expect_navigation():
            page.click("#btn-guidelines-seen")
    return page


def _video(page: Any, url: str) -> str:
    """The video id behind a ``/videos/<token>`` URL of the browser's session (the test decodes
    it with the server's secret: the page never names the video)."""
    cookie = next(c["value"] for c in page.context.cookies() if c["name"] == "fireval_session")
    app = page.context.fireval_app
    return video_in_session(app, sid_of_cookie(cookie), url)


def _network_bytes(ctx: Any, page: Any) -> dict[str, int]:
    """Bytes each video took over the network from now on (DevTools events), by video id:
    per request the total of ``loadingFinished`` once finished (0 when served from the cache),
    else of its ``dataReceived`` chunks so far (a request cancelled midway)."""
    cdp = ctx.new_cdp_session(page)
    cdp.send("Network.enable")
    names: dict[str, str] = {}
    chunks: dict[str, int] = {}
    done: dict[str, int] = {}

    class Bytes(dict):  # type: ignore[type-arg]
        def __getitem__(self, name: str) -> int:
            return sum(done.get(r, chunks.get(r, 0)) for r, u in names.items() if _video(page, u) == name)

        def get(self, name: str, default: int = 0) -> int:  # type: ignore[override]
            return self[name] if name in {_video(page, u) for u in names.values()} else default

    def on_request(ev: dict[str, Any]) -> None:
        if "/videos/" in ev["request"]["url"]:
            names[ev["requestId"]] = ev["request"]["url"]

    def on_data(ev: dict[str, Any]) -> None:
        if ev["requestId"] in names:
            chunks[ev["requestId"]] = chunks.get(ev["requestId"], 0) + int(ev.get("encodedDataLength", 0))

    def on_done(ev: dict[str, Any]) -> None:
        if ev["requestId"] in names:
            done[ev["requestId"]] = int(ev.get("encodedDataLength", 0))

    cdp.on("Network.requestWillBeSent", on_request)
    cdp.on("Network.dataReceived", on_data)
    cdp.on("Network.loadingFinished", on_done)
    return Bytes()


def _preloaded(page: Any) -> str:
    """Wait until the hidden player holds the next video, playable; return its video id."""
    _wait_until(page, f"['ready', 'complete'].includes({NEXT}.dataset.state) && {NEXT}.readyState >= 3")
    return _video(page, str(page.evaluate(f"{NEXT}.getAttribute('src')")))


def _shown(page: Any) -> str:
    """The video id of the page's player."""
    return _video(page, str(page.get_attribute("#player", "src")))


def test_next_video_is_preloaded_and_served_from_cache(
    campaign, tmp_path, chromium_path, chromium_args
) -> None:  # type: ignore[no-untyped-def]
    from playwright.sync_api import sync_playwright

    app, tokens, videos = campaign
    errors: list[str] = []
    with sync_playwright() as p, _serve(app) as base:
        browser = p.chromium.launch(executable_path=chromium_path, args=chromium_args)
        try:
            maker = browser.new_page()
            for k, rgb in enumerate(("230,120,20", "20,90,220", "30,160,60", "200,40,160")):
                (videos / f"v{k}.webm").write_bytes(base64.b64decode(maker.evaluate(_RECORD_JS, rgb)))
            maker.close()
            ctx = browser.new_context(viewport={"width": 1400, "height": 900}, base_url=base)
            ctx.fireval_app = app  # for _video: the test decodes the page's video tokens
            page = ctx.new_page()
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            net = _network_bytes(ctx, page)  # from the start: the prefetch begins within milliseconds
            _login(page, tokens["ann"])
            assert _shown(page) == "v0"
            html = page.content()  # the video by its token only (blind): no id, no file name
            assert not re.search(r"(?<![\w-])v[01](?:\.webm)?(?![\w-])", html)
            # item 1 on screen: the hidden player has loaded item 2's video, and shows nothing
            assert _preloaded(page) == "v1"
            hidden = page.evaluate(
                f"[{NEXT}.hidden, {NEXT}.muted, {NEXT}.paused, {NEXT}.controls, {NEXT}.getAttribute('aria-hidden')]"
            )
            assert hidden == [True, True, True, False, "true"], hidden
            assert not page.locator("#next-video").is_visible()
            assert page.evaluate(f"{NEXT}.buffered.length > 0 && {NEXT}.buffered.end(0) > 0.5")
            _fits(page, 1400)
            _shoot(page, tmp_path, "annotate-prefetch-1400")
            page.set_viewport_size({"width": 390, "height": 844})
            _fits(page, 390)
            _shoot(page, tmp_path, "annotate-prefetch-390")
            page.set_viewport_size({"width": 1400, "height": 900})
            prefetched = net["v1"]
            assert prefetched > 1000  # the prefetch itself went over the network
            with page.expect_navigation():
                page.keyboard.press("r")
            # the next page plays v1 from the cache: no further byte of it over the network
            assert _shown(page) == "v1"
            _wait_until(page, "document.getElementById('player').readyState >= 2")
            page.wait_for_timeout(300)  # the DevTools events of the player's requests
            assert net["v1"] == prefetched, (net["v1"], prefetched)
            assert _preloaded(page) == "v2"
            # another annotator is handed item 3 (v2) meanwhile: the prediction is stale, and
            # the next page shows what the server hands out (item 4, v3), never v2's item
            with httpx.Client(base_url=base) as other:
                tok = csrf_from(other.get("/login").text)
                r = other.post("/login", data={"token": tokens["ann2"], "csrf_token": tok})
                assert r.status_code in (200, 303)
                sid = sid_of_cookie(other.cookies["fireval_session"])
                assert video_in_session(app, sid, player_src(other.get("/annotate").text)) == "v2"
            with page.expect_navigation():
                page.keyboard.press("i")
            assert _shown(page) == "v3"
            assert page.inner_text("#caption") == "caption 3"
            page.wait_for_selector("#btn-relevant:enabled", timeout=10_000)
            # the last item for ann: nothing follows, nothing is loaded
            _wait_until(page, f"{NEXT}.dataset.state === 'none'")
            assert page.evaluate(f"{NEXT}.getAttribute('src')") is None
            ctx.close()
        finally:
            browser.close()
    assert not errors, errors
    assert Path(tmp_path / "annotate-prefetch-390.png").exists()
