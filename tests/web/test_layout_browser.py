"""Layout regressions seen in screenshots during QA (headless Debian Chromium, real server)."""

from __future__ import annotations

import pytest
from test_explore_browser import server  # noqa: F401  (pytest fixture)

pytestmark = pytest.mark.browser


def test_explore_list_does_not_push_a_phone_screen_sideways(server, chromium_path, chromium_args) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    """At 360 px the query table used to widen the whole page and cut off the run columns."""
    from playwright.sync_api import sync_playwright

    base, admin, _ann, _app = server
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path, args=chromium_args)
        try:
            page = browser.new_page(viewport={"width": 360, "height": 740})
            page.goto(f"{base}/login")
            page.fill("input[name=token]", admin)
            page.click("button[type=submit]")
            page.goto(f"{base}/explore")
            table_width = page.evaluate("document.querySelector('#queries').scrollWidth")
            assert table_width > 360  # the table itself is wider than the screen...
            page_width = page.evaluate("document.documentElement.scrollWidth")
            assert page_width <= 360  # ...but it scrolls inside itself, not the page
            # every run column is still reachable
            assert page.locator("#queries th").last.is_visible()
        finally:
            browser.close()


def test_missing_video_is_reported_instead_of_spinning(server, chromium_path, chromium_args) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    """The annotator's player used to show a loading spinner forever for a missing file."""
    from playwright.sync_api import sync_playwright

    from fireval.judging.pool import PoolItem

    base, _admin, ann, app = server
    app.state.store.add_items([PoolItem("a dog runs", ["c0"], "nofile", {"A": 1})], "toy")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path, args=chromium_args)
        try:
            page = browser.new_page()
            page.goto(f"{base}/login")
            page.fill("input[name=token]", ann)
            page.click("button[type=submit]")
            page.goto(f"{base}/annotate")
            assert page.inner_text("#caption") == "a dog runs"
            page.wait_for_selector("#video-error", timeout=10_000)
            assert "could not be loaded" in page.inner_text("#video-error")
            assert "nofile" not in page.content()  # the message does not name the video (blind)
            assert not page.locator("#player").is_visible()  # no endless spinner
            assert page.locator("#btn-skip").is_visible()
        finally:
            browser.close()
