"""Issue 13 in headless Chromium (real server): the annotator's and the admin's flows at 1400 and 390 px.

Annotator: guidelines on first visit, answers wait for a playable video (``canplay``), speed and
frame step, keyboard help on ``?``, history change and undo with an announced status line, flag
for review, a skip that records "video failed". Admin: review queue, adjudication column.
Screenshots go to pytest's ``tmp_path`` (copied to ``$FIREVAL_SCREENSHOTS`` when set). Videos
are real WebM clips recorded by the browser (canvas + MediaRecorder), as in the explorer test.
"""

from __future__ import annotations

import base64
import os
import shutil
from pathlib import Path

import pytest
from test_explore_browser import _RECORD_JS, _serve, _wait_until

from fireval.judging.gold import GOLD_BASE, GoldPair
from fireval.judging.pool import PoolItem
from fireval.judging.store import Store
from fireval.web.app import WebConfig, create_app

pytestmark = pytest.mark.browser

WIDTHS = ((1400, 900), (390, 844))

# Logged before the page's own listeners run: the buttons' state when the document is parsed and
# when the video first reports canplay (capture phase on the document sees it before the player's
# own listener enables the buttons).
_PROBE = """
window.__probe = [];
document.addEventListener('DOMContentLoaded', () => {
  const b = document.getElementById('btn-relevant');
  if (b) window.__probe.push(['parsed', b.disabled]);
});
document.addEventListener('canplay', () => {
  const b = document.getElementById('btn-relevant');
  if (b) window.__probe.push(['canplay', b.disabled]);
}, true);
"""


def _shoot(page, tmp_path: Path, name: str) -> Path:  # type: ignore[no-untyped-def]
    out = tmp_path / f"{name}.png"
    page.screenshot(path=str(out), full_page=True)
    keep = os.environ.get("FIREVAL_SCREENSHOTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(out, Path(keep) / out.name)
    return out


def _fits(page, width: int) -> None:  # type: ignore[no-untyped-def]
    assert page.evaluate("document.documentElement.scrollWidth") <= width, "page scrolls sideways"


def _video_id(app, ctx, page) -> str:  # type: ignore[no-untyped-def]
    """The video id behind the player's ``/videos/<token>`` (tests only: the page never names it)."""
    import json

    cookie = next(c["value"] for c in ctx.cookies() if c["name"] == "fireval_session")
    sid = json.loads(base64.b64decode(cookie.split(".")[0]))["sid"]
    token = (page.get_attribute("#player", "src") or "").split("#")[0].removeprefix("/videos/")
    got = app.state.video_tokens.decode(sid, token)
    assert got is not None, token
    return str(got)


def _raw_id(app, ctx, item_handle: str) -> int:  # type: ignore[no-untyped-def]
    """The store's id behind a handle the page showed (tests only: from the browser's session)."""
    import json

    cookie = next(c["value"] for c in ctx.cookies() if c["name"] == "fireval_session")
    sid = json.loads(base64.b64decode(cookie.split(".")[0]))["sid"]
    got = app.state.handles.decode(sid, item_handle)
    assert got is not None, item_handle
    return int(got)


def _inside(page, selector: str, width: int) -> None:  # type: ignore[no-untyped-def]
    box = page.locator(selector).first.bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width, (selector, box)


@pytest.fixture()
def campaign(tmp_path):  # type: ignore[no-untyped-def]
    url = f"sqlite:///{tmp_path / 'store.db'}"
    st = Store(url)
    captions = [
        ("a man is playing a guitar on a stage", "v0", True),
        ("a woman <b>cooks</b> pasta in a kitchen", "v1", False),
        ("a dog runs along the beach", "nofile", False),
        ("two people dance in the rain", "v1", False),
        ("a child rides a red bicycle", "v0", False),
    ]
    st.add_items(
        [PoolItem(c, [f"c{i}"], v, {"RUN": 1}, double=d) for i, (c, v, d) in enumerate(captions)], "toy"
    )
    tokens = {
        n: st.add_annotator(n, r)[1]
        for n, r in (("ann", "annotator"), ("ann2", "annotator"), ("boss", "admin"))
    }
    for name in ("helper1", "helper2"):  # they make a disagreement for the admin page
        st.add_annotator(name)
    st.gold.load([GoldPair("a man plays a guitar in the snow", "v0", "irrelevant")])
    st.close()
    guide = tmp_path / "guide.md"
    guide.write_text(
        "# Campaign X\n\nEvery element of the caption must be present in the video.\n\n"
        "- Look at the **whole** clip <script>alert(1)</script>\n\n"
        "```example\ncaption: a man plays a guitar\nvideo: a man strums a guitar\nanswer: relevant\n```\n"
    )
    videos = tmp_path / "videos"
    videos.mkdir()
    app = create_app(
        WebConfig(
            db_url=url, dataset="toy", video_dir=videos, video_ext=".webm", guidelines=guide, gold_rate=0.34
        )
    )
    # the flow below needs the gold item third: the fixed rule (no key) instead of a drawn position
    # (judging.gold._gold_turn; the draw is tested in test_security_audit)
    app.state.store.gold.key = None
    return app, tokens, videos


def test_annotator_and_admin_flows_at_both_widths(campaign, tmp_path, chromium_path, chromium_args) -> None:  # type: ignore[no-untyped-def]
    from playwright.sync_api import sync_playwright

    app, tokens, videos = campaign
    errors: list[str] = []
    with sync_playwright() as p, _serve(app) as base:
        browser = p.chromium.launch(executable_path=chromium_path, args=chromium_args)
        try:
            maker = browser.new_page()
            for vid, rgb in (("v0", "230,120,20"), ("v1", "20,90,220")):
                (videos / f"{vid}.webm").write_bytes(base64.b64decode(maker.evaluate(_RECORD_JS, rgb)))
            maker.close()
            for (width, height), who in zip(WIDTHS, ("ann", "ann2"), strict=True):
                ctx = browser.new_context(viewport={"width": width, "height": height}, base_url=base)
                ctx.add_init_script(_PROBE)
                page = ctx.new_page()
                page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
                page.goto("/login")
                page.fill("input[name=token]", tokens[who])
                with page.expect_navigation():
                    page.click("button[type=submit]")
                # first visit: the campaign's guidelines, HTML escaped, examples as cards
                assert page.locator("#guidelines-panel").is_visible()
                assert page.locator("#guidelines-panel figure.example-relevant").is_visible()
                assert "<script>alert(1)</script>" in page.inner_text("#guidelines-panel")
                assert "Every element of the caption" in page.inner_text("#guideline")
                _fits(page, width)
                _shoot(page, tmp_path, f"annotate-guidelines-{width}")
                with page.expect_navigation():
                    page.click("#btn-guidelines-seen")
                assert page.locator("#guidelines-panel").count() == 0
                # stored per annotator: another browser (a new session) does not show them again
                other = browser.new_context(viewport={"width": width, "height": height}, base_url=base)
                second = other.new_page()
                second.goto("/login")
                second.fill("input[name=token]", tokens[who])
                with second.expect_navigation():
                    second.click("button[type=submit]")
                assert second.url.endswith("/annotate") and second.locator("#guidelines-panel").count() == 0
                other.close()
                # answers wait for the video: disabled when parsed and at canplay, enabled after
                page.wait_for_selector("#btn-relevant:enabled", timeout=10_000)
                probe = page.evaluate("window.__probe")
                assert probe[0] == ["parsed", True] and ["canplay", True] in probe, probe
                assert page.locator("#btn-skip").is_enabled()
                # speed and frame step
                page.select_option("#speed", "2")
                assert page.evaluate("document.getElementById('player').playbackRate") == 2
                # from the start: the clip is under a second long, and on a loaded machine it may
                # have played to its end (where a step forward is clamped) before we get here
                page.evaluate("(p => { p.pause(); p.currentTime = 0; })(document.getElementById('player'))")
                _wait_until(page, "!document.getElementById('player').seeking")
                assert page.evaluate("document.getElementById('player').duration") > 0.2
                page.keyboard.press(".")
                t1 = page.evaluate("document.getElementById('player').currentTime")
                assert page.evaluate("document.getElementById('player').paused")
                page.keyboard.press(".")
                # polled from Python: page.wait_for_function compiles its predicate inside the
                # page, which the app's CSP (no 'unsafe-eval') refuses
                _wait_until(page, f"document.getElementById('player').currentTime > {t1}")
                page.keyboard.press(",")
                assert "Paused at" in page.inner_text("#video-state")
                # keyboard help
                page.keyboard.press("?")
                assert page.locator("#help").is_visible()
                assert page.evaluate("document.activeElement.id") == "btn-help-close"
                _inside(page, ".help-box", width)
                _shoot(page, tmp_path, f"annotate-help-{width}")
                page.keyboard.press("Escape")
                assert not page.locator("#help").is_visible()
                # answer, then change it from the history
                first = page.get_attribute("#item", "data-item-id")
                with page.expect_navigation():
                    page.keyboard.press("r")
                row = page.locator(f"#hist-{first}")
                assert row.locator(".hist-label").inner_text().startswith("relevant")
                with page.expect_navigation():
                    row.locator("button.hist-irrelevant").click()
                assert "Changed your answer: relevant → irrelevant." in page.inner_text("#status")
                assert page.get_attribute("#status", "aria-live") == "polite"
                assert (
                    page.locator(f"#hist-{first} .hist-label")
                    .inner_text()
                    .startswith("irrelevant (changed 1")
                )
                _inside(page, f"#hist-{first} button.hist-skip", width)
                # flag the current item with a reason
                flagged = page.get_attribute("#item", "data-item-id")
                flagged_id = _raw_id(app, ctx, flagged)  # the admin's review page shows store ids
                page.keyboard.press("f")
                assert page.evaluate("document.activeElement.id") == "flag-reason"
                page.keyboard.type("is it a stage or a street?")
                with page.expect_navigation():
                    page.click("#btn-flag")
                assert "Flagged for review" in page.inner_text("#status")
                assert page.get_attribute("#item", "data-item-id") != flagged
                # after two answers a third of what is shown is gold: this one, like any item
                shown = page.get_attribute("#item", "data-item-id")  # an opaque handle (web.handles)
                assert len(shown) == 32 and len(first) == 32 and not shown.isdigit()
                assert _raw_id(app, ctx, shown) > GOLD_BASE > _raw_id(app, ctx, first)
                assert page.inner_text("#caption") == "a man plays a guitar in the snow"
                _fits(page, width)
                _shoot(page, tmp_path, f"annotate-history-{width}")
                # the item whose video is missing: no answer possible, the skip records why
                while _video_id(app, ctx, page) != "nofile":
                    page.wait_for_selector("#btn-relevant:enabled", timeout=10_000)
                    with page.expect_navigation():
                        page.keyboard.press("i")
                page.wait_for_selector("#video-error", timeout=10_000)
                assert (
                    page.locator("#btn-relevant").is_disabled()
                    and page.locator("#btn-irrelevant").is_disabled()
                )
                page.keyboard.press("r")  # refused, with a message
                assert "Wait for the video" in page.inner_text("#status")
                with page.expect_navigation():
                    page.keyboard.press("s")
                assert "Skipped (video failed)" in page.inner_text("#status")
                # undo with feedback
                with page.expect_navigation():
                    page.keyboard.press("u")
                assert "Undone: your last answer is withdrawn." in page.inner_text("#status")
                # guidelines one key away
                with page.expect_navigation():
                    page.keyboard.press("g")
                assert page.url.endswith("/guidelines") and page.locator("figure.example").count() == 1
                _fits(page, width)
                _shoot(page, tmp_path, f"guidelines-{width}")
                # blind: no explorer for annotators
                assert page.locator("a[href='/explore']").count() == 0
                assert page.goto(f"{base}/explore").status == 403
                ctx.close()
                # undo the skip left the missing-video item open: take it back for the next width
                st = app.state.store
                ann = next(a for a in st.annotators() if a.name == who)
                st.flags.skip(ann.id, st.next_item(ann.id).id, "video failed")

                # a disagreement for the adjudication column: two helpers split on a new double item
                st.add_items([PoolItem(f"a tie at {width} px", ["t"], "v0", {"RUN": 1}, double=True)], "toy")
                tie = next(i["id"] for i in st.items_table() if i["caption"] == f"a tie at {width} px")
                helpers = {a.name: a.id for a in st.annotators() if a.name.startswith("helper")}
                # assigns this item, then answers (as a vote: the helpers are no admins)
                st.handout.adjudicate(helpers["helper1"], tie, "relevant", kind="vote")
                st.handout.adjudicate(helpers["helper2"], tie, "irrelevant", kind="vote")

                # admin: review queue and adjudication
                ctx = browser.new_context(viewport={"width": width, "height": height}, base_url=base)
                page = ctx.new_page()
                page.goto("/login")
                page.fill("input[name=token]", tokens["boss"])
                with page.expect_navigation():
                    page.click("button[type=submit]")
                _fits(page, width)
                _inside(page, "#disagreements button.adj-relevant", width)
                _inside(page, "#disagreements button.adj-irrelevant", width)
                assert page.locator("#quality").is_visible() and page.locator("#pair-matrix").is_visible()
                assert "1 / 1" in page.inner_text("#quality")  # the gold item, answered irrelevant
                _inside(page, "#quality", width)
                assert page.locator(f"#dis-{tie}").is_visible()
                _shoot(page, tmp_path, f"admin-{width}")
                page.goto("/admin/review")
                assert "is it a stage or a street?" in page.inner_text("#review-queue")
                assert "video failed" in page.inner_text("#flag-summary")
                _fits(page, width)
                _inside(page, "#review-queue button.res-discard", width)
                _shoot(page, tmp_path, f"review-{width}")
                with page.expect_navigation():
                    page.locator(f"#flag-item-{flagged_id} button.res-irrelevant").click()
                assert "resolved (irrelevant)" in page.inner_text("#status")
                ctx.close()
        finally:
            browser.close()
    assert not [e for e in errors if "Content Security Policy" in e], errors
    flags = app.state.store.status()["flags"]
    assert flags["open"] == 0 and flags["resolved"] == {"irrelevant": 2}
    assert flags["skip_reasons"] == {"video failed": 4}
    gold = app.state.store.status()["gold"]["per_annotator"]
    assert gold == {n: {"answered": 1, "correct": 1, "accuracy": 1.0} for n in ("ann", "ann2")}
