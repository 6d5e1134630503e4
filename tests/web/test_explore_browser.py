"""The explorer in headless Debian Chromium against a real uvicorn server.

Screenshots of the query list and a query page at 1400 px and 390 px are written to pytest's
``tmp_path`` (and copied to ``$FIREVAL_SCREENSHOTS`` when set, to look at them). Poster frames
are checked on real videos: the browser itself records small WebM clips (canvas +
MediaRecorder), so the test needs neither ffmpeg nor a video file in the repository.
"""

from __future__ import annotations

import base64
import contextlib
import os
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import uvicorn
from test_explore import toy_data

from fireval.core import Run
from fireval.judging.store import Store
from fireval.web.app import WebConfig, create_app

pytestmark = pytest.mark.browser


def _wait_until(page, expression: str, timeout: float = 10.0) -> None:  # type: ignore[no-untyped-def]
    """Wait until a JS expression is truthy, evaluated through Playwright's protocol channel
    (which the page's CSP does not govern), for at most ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not page.evaluate(expression):
        if time.monotonic() > deadline:
            raise AssertionError(f"not true after {timeout} s: {expression}")
        page.wait_for_timeout(25)


@contextlib.contextmanager
def _serve(app: object) -> Iterator[str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    srv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))  # type: ignore[arg-type]
    th = threading.Thread(target=srv.run, daemon=True)
    th.start()
    for _ in range(200):
        if srv.started:
            break
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        srv.should_exit = True
        th.join(timeout=10)


@pytest.fixture()
def server(tmp_path) -> Iterator[tuple[str, str, str, object]]:  # type: ignore[no-untyped-def]
    coll, runs, j = toy_data()
    url = f"sqlite:///{tmp_path / 'store.db'}"
    store = Store(url)
    _, admin = store.add_annotator("boss", "admin")
    _, ann = store.add_annotator("ann", "annotator")
    store.close()
    (tmp_path / "videos").mkdir()
    app = create_app(
        WebConfig(
            db_url=url,
            dataset="toy",
            collection=coll,
            runs=runs,
            judgments=j,
            video_dir=tmp_path / "videos",
            extra={"explore_k": 2},
            open_explore=True,  # annotators look at the explorer here
        )
    )
    with _serve(app) as base:
        yield base, admin, ann, app


# Records ~0.8 s of a solid colour (with a moving white square) as WebM/VP8, returned as base64.
_RECORD_JS = """async (rgb) => {
  const c = document.createElement('canvas'); c.width = 320; c.height = 180;
  const g = c.getContext('2d');
  const rec = new MediaRecorder(c.captureStream(25), {mimeType: 'video/webm;codecs=vp8'});
  const chunks = [];
  rec.ondataavailable = e => chunks.push(e.data);
  let i = 0;
  const draw = () => { g.fillStyle = `rgb(${rgb})`; g.fillRect(0, 0, 320, 180);
                       g.fillStyle = '#fff'; g.fillRect(200 + i, 20, 40, 40); i += 2; };
  draw(); const timer = setInterval(draw, 40);
  rec.start();
  await new Promise(r => setTimeout(r, 800));
  rec.stop(); clearInterval(timer);
  await new Promise(r => rec.onstop = r);
  const b = new Uint8Array(await new Blob(chunks).arrayBuffer());
  let s = ''; for (let k = 0; k < b.length; k++) s += String.fromCharCode(b[k]);
  return btoa(s);
}"""

#: one colour per video of the toy collection (v0..v3)
COLOURS = {"v0": (230, 120, 20), "v1": (20, 90, 220), "v2": (30, 160, 60), "v3": (200, 40, 160)}


def _shoot(page, tmp_path: Path, name: str) -> Path:  # type: ignore[no-untyped-def]
    out = tmp_path / f"{name}.png"
    page.screenshot(path=str(out), full_page=True)
    keep = os.environ.get("FIREVAL_SCREENSHOTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(out, Path(keep) / out.name)
    return out


def test_explorer_posters_ranks_and_screenshots(tmp_path, chromium_path, chromium_args) -> None:  # type: ignore[no-untyped-def]
    from playwright.sync_api import sync_playwright

    coll, runs, j = toy_data()
    # a third run that ranks c0's instance video v0 last: it is shown below its top 2 with rank 4
    runs["C"] = Run(
        "C",
        scores=np.array(
            [[0.1, 0.9, 0.8, 0.5], [0.1, 0.9, 0.3, 0.2], [0.2, 0.1, 0.9, 0.7], [0.1, 0.2, 0.3, 0.9]]
        ),
    )
    url = f"sqlite:///{tmp_path / 'store.db'}"
    store = Store(url)
    _, ann = store.add_annotator("ann", "annotator")
    store.close()
    videos = tmp_path / "videos"
    videos.mkdir()
    app = create_app(
        WebConfig(
            db_url=url,
            dataset="toy",
            collection=coll,
            runs=runs,
            judgments=j,
            video_dir=videos,
            video_ext=".webm",
            extra={"explore_k": 2},
            open_explore=True,  # annotators look at the explorer here
        )
    )
    with sync_playwright() as p, _serve(app) as base:
        browser = p.chromium.launch(executable_path=chromium_path, args=chromium_args)
        try:
            maker = browser.new_page()
            for vid, rgb in COLOURS.items():
                data = maker.evaluate(_RECORD_JS, ",".join(map(str, rgb)))
                (videos / f"{vid}.webm").write_bytes(base64.b64decode(data))
            maker.close()
            shots = {}
            for width, height in ((1400, 900), (390, 844)):
                page = browser.new_page(viewport={"width": width, "height": height})
                page.goto(f"{base}/login")
                page.fill("input[name=token]", ann)
                page.click("button[type=submit]")
                page.goto(f"{base}/explore")
                heads = page.eval_on_selector_all("#queries th", "els => els.map(e => e.textContent)")
                assert "A unjudged@2" in heads and "C unjudged@2" in heads
                assert page.evaluate("document.documentElement.scrollWidth") <= width  # no sideways page
                shots[f"explore-list-{width}"] = _shoot(page, tmp_path, f"explore-list-{width}")
                page.goto(f"{base}/explore/query/0")
                # the instance video v0 is outside C's top 2: shown below it with its rank
                outside = page.locator(".run-col[data-run='C'] .outside-list li")
                assert (
                    outside.get_attribute("data-video") == "v0" and outside.get_attribute("data-rank") == "4"
                )
                assert page.inner_text(".run-col[data-run='C'] .instance-rank") == "4"
                # poster frames: every player has decoded a frame without being played
                _wait_until(  # not page.wait_for_function: the app's CSP forbids its eval
                    page,
                    "[...document.querySelectorAll('video')].every(v => v.readyState >= 2)",
                    timeout=15.0,
                )
                assert page.eval_on_selector_all("video", "vs => vs.every(v => v.paused)")
                # the frame at 0.1 s is shown, not a seek in progress
                assert page.eval_on_selector_all(
                    "video", "vs => vs.every(v => !v.seeking && v.currentTime > 0)"
                )
                pixels = page.eval_on_selector_all(
                    "video",
                    """vs => vs.map(v => { const c = document.createElement('canvas'); c.width = 32; c.height = 18;
                        const g = c.getContext('2d'); g.drawImage(v, 0, 0, 32, 18);
                        return [v.title, Array.from(g.getImageData(4, 14, 1, 1).data.slice(0, 3))]; })""",
                )
                assert len(pixels) == 7  # 3 runs x top 2 + the outside instance video
                for vid, rgb in pixels:
                    assert np.abs(np.array(rgb) - np.array(COLOURS[vid])).max() < 40, (vid, rgb)
                if width < 500:
                    assert page.evaluate("document.documentElement.scrollWidth") <= width
                    # the run columns stack on a phone
                    xs = page.eval_on_selector_all(
                        ".run-col", "els => els.map(e => e.getBoundingClientRect().x)"
                    )
                    assert len(set(round(x) for x in xs)) == 1
                page.wait_for_timeout(1000)  # let the players' controls settle before the screenshot
                shots[f"explore-query-{width}"] = _shoot(page, tmp_path, f"explore-query-{width}")
                page.close()
            assert all(path.stat().st_size > 5_000 for path in shots.values())
        finally:
            browser.close()


def test_explorer_in_browser(server, chromium_path, chromium_args) -> None:  # type: ignore[no-untyped-def]
    from playwright.sync_api import sync_playwright

    base, admin, ann, app = server
    errors: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path, args=chromium_args)
        try:
            page = browser.new_page()
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.goto(f"{base}/login")
            page.fill("input[name=token]", admin)
            page.click("button[type=submit]")
            page.goto(f"{base}/explore")
            assert page.locator("#queries tbody tr").count() == 4
            page.check("input[name=unjudged]")
            page.click("#filters button[type=submit]")
            page.wait_for_url("**/explore?*unjudged=1*")
            assert page.inner_text("#total") == "2"
            assert page.locator("#queries tbody tr").count() == 2
            page.click("#queries tbody tr[data-index='3'] a")
            page.wait_for_url("**/explore/query/3")
            assert page.inner_text("#caption") == "a man plays guitar"
            cols = page.locator(".run-col")
            assert cols.count() == 2
            badges = page.eval_on_selector_all(".run-col .badge", "els => els.map(e => e.textContent.trim())")
            assert badges.count("instance") == 2 and badges.count("unjudged") == 2
            # the explorer's stylesheet applies (the CSP allows styles from 'self' only)
            colour = page.eval_on_selector(".badge-unjudged", "e => getComputedStyle(e).backgroundColor")
            assert colour == "rgb(153, 153, 153)"
            deco = page.eval_on_selector(".badge-unjudged", "e => getComputedStyle(e).textDecorationLine")
            assert deco == "none"
            assert page.locator("video").count() == 4
            assert page.eval_on_selector("video", "e => e.getAttribute('src')") == "/videos/v3.mp4#t=0.1"
            page.locator(".run-col[data-run='A'] input[name=pair]").check()
            page.click("#queue-submit")
            page.wait_for_url("**/explore/query/3?queued=1")
            assert "1 pair(s) added" in page.inner_text("#queued")
            # judged-irrelevant videos are struck through
            page.goto(f"{base}/explore/query/2")
            assert (
                page.eval_on_selector(
                    ".state-irrelevant .badge", "e => getComputedStyle(e).textDecorationLine"
                )
                == "line-through"
            )
            assert page.inner_text(".state-irrelevant .badge").startswith("human")
            # an annotator sees the evidence but no queue control
            page.click("form.logout button")
            page.goto(f"{base}/login")
            page.fill("input[name=token]", ann)
            page.click("button[type=submit]")
            page.goto(f"{base}/explore/query/3")
            assert page.locator("input[name=pair]").count() == 0
            assert page.locator("#queue-submit").count() == 0
        finally:
            browser.close()
    assert not [e for e in errors if "Content Security Policy" in e], errors
    items = app.state.store.items_table()
    assert [(i["caption"], i["video_id"]) for i in items] == [("a man plays guitar", "v2")]
