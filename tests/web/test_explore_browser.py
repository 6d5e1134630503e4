"""The explorer in headless Debian Chromium against a real uvicorn server."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest
import uvicorn
from test_explore import toy_data

from fireval.judging.store import Store
from fireval.web.app import WebConfig, create_app

pytestmark = pytest.mark.browser


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
        )
    )
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    srv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    th = threading.Thread(target=srv.run, daemon=True)
    th.start()
    for _ in range(200):
        if srv.started:
            break
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}", admin, ann, app
    finally:
        srv.should_exit = True
        th.join(timeout=10)


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
            assert page.eval_on_selector("video", "e => e.getAttribute('src')") == "/videos/v3.mp4"
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
