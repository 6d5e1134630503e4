"""The annotation app without surprises (issue 24 item 9), in headless Debian Chromium at 390 and
1400 px against a real uvicorn server: the explorer shows the store's own labels; the admin's
download is the CLI export (a zip of the FIRE JSON and its sidecar); the annotator's history
shows each answer's video as a poster frame by session token (blind); a flag on a gold item
reaches the admin with its reason; every admin control is on screen and has an accessible name
(read from Chromium's accessibility tree); ``fireval explore`` browses runs with no login.

One browser and one server for the module. Screenshots go to pytest's temporary directory (and
to ``$FIREVAL_SCREENSHOTS`` when set, to look at them); the assertions are on the DOM, the
geometry and the accessibility tree. Videos are small WebM clips the browser records itself
(one colour each), so poster frames can be checked by their pixels.
"""

from __future__ import annotations

import base64
import io
import json
import os
import re
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers import sid_of_cookie, video_in_session
from test_explore import toy_data
from test_explore_browser import _RECORD_JS, COLOURS, _serve, _shoot, _wait_until

from fireval.judging.gold import GOLD_BASE, GoldPair
from fireval.judging.pool import PoolItem
from fireval.judging.store import Store
from fireval.web.app import WebConfig, create_app

pytestmark = pytest.mark.browser

WIDTHS = [(390, 844), (1400, 900)]
#: roles of controls in Chromium's accessibility tree (each needs a name)
CONTROL_ROLES = {
    "button",
    "link",
    "textbox",
    "combobox",
    "checkbox",
    "radio",
    "searchbox",
    "spinbutton",
    "slider",
    "switch",
    "menuitem",
    "listbox",
    "tab",
    "DisclosureTriangle",
    "PopUpButton",
}
#: every element a user can operate (rendered ones are checked for geometry)
CONTROLS = (
    "a[href], button, input:not([type=hidden]), select, textarea, summary, video[controls], "
    "[tabindex]:not([tabindex='-1'])"
)
_OFF_SCREEN_JS = """(w) => {
  const bad = [];
  for (const el of document.querySelectorAll(arguments_sel)) {
    const r = el.getBoundingClientRect();
    if (r.width === 0 && r.height === 0) continue;  // not rendered (closed <details>, [hidden])
    let clip = {left: 0, right: w};
    for (let p = el.parentElement; p; p = p.parentElement) {  // clipped by a scrolling box?
      const ox = getComputedStyle(p).overflowX;
      if (ox !== 'visible') { const q = p.getBoundingClientRect();
        clip = {left: Math.max(clip.left, q.left), right: Math.min(clip.right, q.right)}; }
    }
    if (r.left < clip.left - 0.5 || r.right > clip.right + 0.5)
      bad.push(el.outerHTML.slice(0, 100) + ` [${Math.round(r.left)}, ${Math.round(r.right)}]`);
  }
  return bad;
}""".replace("arguments_sel", json.dumps(CONTROLS))


@dataclass
class Env:
    base: str
    app: Any
    browser: Any
    admin: str
    tmp: Path


@pytest.fixture(scope="module")
def env(tmp_path_factory, chromium_path, chromium_args) -> Iterator[Env]:  # type: ignore[no-untyped-def]
    from playwright.sync_api import sync_playwright

    tmp = tmp_path_factory.mktemp("issue24")
    coll, runs, j = toy_data()
    url = f"sqlite:///{tmp / 'store.db'}"
    st = Store(url)
    # one item the explorer shows: (c3, v2), in both runs' top 2, labelled by the store only...
    st.add_items([PoolItem("a man plays guitar", ["c3"], "v2", {"A": 2}, True)], "msrvtt-1k-A")
    st.add_items([PoolItem("a contested pool caption", ["p99"], "v3", {"A": 1}, True)], "msrvtt-1k-A")
    # ...and pool items outside the toy collection (their answers leave the explorer's labels alone)
    st.add_items(
        [PoolItem(f"pool caption {i}", [f"p{i}"], f"v{i % 4}", {"A": 1}) for i in range(40)], "msrvtt-1k-A"
    )
    st.gold.load([GoldPair("a gold dog", "v1", "relevant")])
    boss, admin = st.add_annotator("boss", "admin")
    a, b = (st.add_annotator(n)[0] for n in ("early-a", "early-b"))
    st.gold.rate = 0.0
    guitar = next(i["id"] for i in st.items_table() if i["caption"] == "a man plays guitar")
    for u, lab in ((a, "relevant"), (b, "irrelevant")):  # a disagreement for the admin page
        assert st.next_item(u.id).id == guitar
        st.submit(u.id, guitar, lab)
    contested = next(i["id"] for i in st.items_table() if i["caption"] == "a contested pool caption")
    for u, lab in ((a, "relevant"), (b, "irrelevant")):  # a disagreement left open for the admin
        assert st.next_item(u.id).id == contested
        st.submit(u.id, contested, lab)
    st.flags.flag(a.id, st.next_item(a.id).id, "is this a cartoon?")  # an open pool flag
    st.adjudicate(boss.id, guitar, "irrelevant")  # decided: the explorer shows it as labelled...
    st.submit(b.id, st.next_item(b.id).id, "relevant")
    b2 = st.next_item(b.id).id
    st.submit(b.id, b2, "relevant")
    st.submit(a.id, st.next_item(a.id).id, "irrelevant")
    st.close()
    videos = tmp / "videos"
    videos.mkdir()
    app = create_app(
        WebConfig(
            db_url=url,
            dataset="MSRVTT",
            collection=coll,
            runs=runs,
            judgments=j,
            video_dir=videos,
            video_ext=".webm",
            extra={"explore_k": 2},
            model_names={"A": "CLIP4CLIP"},
            gold_rate=0.5,
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
            yield Env(base, app, browser, admin, tmp)
        finally:
            browser.close()


def _page(env: Env, width: int, height: int, token: str | None = None):  # type: ignore[no-untyped-def]
    page = env.browser.new_page(viewport={"width": width, "height": height})
    if token is not None:
        page.goto(f"{env.base}/login")
        page.fill("input[name=token]", token)
        page.click("button[type=submit]")
        page.wait_for_url(re.compile(r"/(annotate|admin)$"))
    return page


def _off_screen(page, width: int) -> list[str]:  # type: ignore[no-untyped-def]
    return list(page.evaluate(_OFF_SCREEN_JS, width))


def _unnamed(page) -> list[str]:  # type: ignore[no-untyped-def]
    """Controls in Chromium's accessibility tree without an accessible name."""
    cdp = page.context.new_cdp_session(page)
    try:
        nodes = cdp.send("Accessibility.getFullAXTree")["nodes"]
        bad = []
        for n in nodes:
            role = n.get("role", {}).get("value")
            if n.get("ignored") or role not in CONTROL_ROLES:
                continue
            if not str(n.get("name", {}).get("value", "")).strip():
                desc = "?"
                if "backendDOMNodeId" in n:
                    node = cdp.send("DOM.describeNode", {"backendNodeId": n["backendDOMNodeId"]})["node"]
                    desc = f"<{node.get('localName')} {node.get('attributes')}>"
                bad.append(f"{role}: {desc}")
        return bad
    finally:
        cdp.detach()


#: form fields named by a placeholder alone: Chromium falls back to it, but it is no label
#: (it disappears while typing, and the accessible-name computation ranks it last)
_PLACEHOLDER_ONLY_JS = """() => [...document.querySelectorAll('input:not([type=hidden]), select, textarea')]
  .filter(el => !(el.labels && el.labels.length) && !el.getAttribute('aria-label')
                && !el.getAttribute('aria-labelledby') && !el.getAttribute('title'))
  .map(el => el.outerHTML.slice(0, 100))"""


def _check_controls(page, width: int) -> None:  # type: ignore[no-untyped-def]
    assert page.evaluate("document.documentElement.scrollWidth") <= width  # no sideways page
    assert _off_screen(page, width) == []
    assert _unnamed(page) == []
    assert page.evaluate(_PLACEHOLDER_ONLY_JS) == []


def _sid(page) -> str:  # type: ignore[no-untyped-def]
    value = next(c["value"] for c in page.context.cookies() if c["name"] == "fireval_session")
    return sid_of_cookie(value)


def _annotator(env: Env, name: str) -> tuple[int, str]:
    ann, token = env.app.state.store.add_annotator(name)
    env.app.state.guidelines_seen.mark(ann.id, env.app.state.guidelines.digest)  # no first-visit panel
    return ann.id, token


def _colour_of(page, selector: str) -> list[list[int]]:  # type: ignore[no-untyped-def]
    return list(
        page.eval_on_selector_all(
            selector,
            """vs => vs.map(v => { const c = document.createElement('canvas'); c.width = 32; c.height = 18;
                const g = c.getContext('2d'); g.drawImage(v, 0, 0, 32, 18);
                return Array.from(g.getImageData(4, 14, 1, 1).data.slice(0, 3)); })""",
        )
    )


@pytest.mark.parametrize(("width", "height"), WIDTHS)
def test_admin_controls_on_screen_and_named(env: Env, width: int, height: int) -> None:
    page = _page(env, width, height, env.admin)
    try:
        page.goto(f"{env.base}/admin")
        assert page.locator("#disagreements .adj-relevant").count() == 1
        _check_controls(page, width)
        # the add-annotator form by its labels, as a screen reader user finds it
        page.get_by_label("Name", exact=True).fill(f"carol-{width}")
        page.get_by_label("Role", exact=True).select_option("admin")
        page.get_by_role("button", name="Add annotator").click()
        page.wait_for_selector("#new-token")
        assert f"carol-{width}" in page.inner_text("#new-token")
        row = page.locator("#annotators tr", has_text=f"carol-{width}")
        for action in ("End sessions", "New token", "Disable"):  # each named after its annotator
            btn = row.get_by_role("button", name=f"{action}: carol-{width}")
            assert btn.count() == 1 and btn.is_visible()
        _check_controls(page, width)
        _shoot(page, env.tmp, f"admin-{width}")
        page.goto(f"{env.base}/admin/review")
        _check_controls(page, width)
        _shoot(page, env.tmp, f"review-{width}")
    finally:
        page.close()


@pytest.mark.parametrize(("width", "height"), WIDTHS)
def test_history_shows_each_answer_video_blind(env: Env, width: int, height: int) -> None:
    _, token = _annotator(env, f"hist-{width}")
    page = _page(env, width, height, token)
    try:
        sid, seen = _sid(page), []
        for _ in range(3):
            page.wait_for_selector("#player")
            seen.append(video_in_session(env.app, sid, page.get_attribute("#player", "src")))
            with page.expect_navigation():  # the answer's redirect back to /annotate
                page.click("#btn-relevant")  # enabled once the video can play
        page.goto(f"{env.base}/annotate")
        posters = page.locator("#history-table video.hist-poster")
        assert posters.count() == 3
        srcs = [posters.nth(i).get_attribute("src") for i in range(3)]
        assert [video_in_session(env.app, sid, s) for s in srcs] == seen[::-1]  # newest first
        assert all(re.fullmatch(r"/videos/[A-Za-z0-9_-]+#t=0\.1", s) for s in srcs)  # a token, no id
        assert not re.search(r"\bv[0-3]\b", page.inner_text("body"))
        assert ".webm" not in page.content()
        _wait_until(page, "[...document.querySelectorAll('video.hist-poster')].every(v => v.readyState >= 2)")
        for vid, rgb in zip(seen[::-1], _colour_of(page, "video.hist-poster"), strict=True):
            assert np.abs(np.array(rgb) - np.array(COLOURS[vid])).max() < 40, (vid, rgb)
        names = [posters.nth(i).get_attribute("aria-label") for i in range(3)]
        assert all(n and n.startswith("Video of your answer to") for n in names)
        assert _off_screen(page, width) == [] and _unnamed(page) == []
        page.wait_for_timeout(300)  # let the players' first frames paint before the screenshot
        _shoot(page, env.tmp, f"history-{width}")
    finally:
        page.close()


@pytest.mark.parametrize(("width", "height"), WIDTHS)
def test_gold_flag_reaches_the_admin_with_its_reason(env: Env, width: int, height: int) -> None:
    st = env.app.state.store
    uid, token = _annotator(env, f"flagger-{width}")
    while (item := st.next_item(uid)) is not None and item.id < GOLD_BASE:
        st.submit(uid, item.id, "relevant")
    assert item is not None, "no gold item handed out"
    page = _page(env, width, height, token)
    try:
        assert page.inner_text("#caption") == "a gold dog"
        page.click("#btn-flag-open")
        page.fill("#flag-reason", f"is a plush dog a dog? ({width})")
        page.click("#btn-flag")
        page.wait_for_selector("#status:has-text('Flagged for review')")
        assert page.inner_text("#status") == "Flagged for review; an expert will look at it."
        assert f"flagger-{width}" not in st.gold.accuracy()  # the gold answer is not counted
    finally:
        page.close()
    admin = _page(env, width, height, env.admin)
    try:
        admin.goto(f"{env.base}/admin/review")
        row = admin.locator(f"#flag-item-{item.id}")
        assert f"flagger-{width}: is a plush dog a dog? ({width})" in row.inner_text()
        assert "gold item" in row.inner_text() and "known answer: relevant" in row.inner_text()
        _check_controls(admin, width)
        _shoot(admin, env.tmp, f"review-gold-{width}")
    finally:
        admin.close()


@pytest.mark.parametrize(("width", "height"), WIDTHS)
def test_download_is_the_cli_export_pair(env: Env, width: int, height: int) -> None:
    page = _page(env, width, height, env.admin)
    try:
        with page.expect_download() as info:
            page.click("#export-link")
        download = info.value
        assert download.suggested_filename == "fire_labels.zip"
        with zipfile.ZipFile(io.BytesIO(Path(download.path()).read_bytes())) as zf:
            assert sorted(zf.namelist()) == ["fire_labels.json", "fire_labels.provenance.json"]
            fire = json.loads(zf.read("fire_labels.json"))
            side = json.loads(zf.read("fire_labels.provenance.json"))
        models = {m for rec in fire["annotations"] + fire["disagreements"] for m in rec["models"]}
        assert models == {"CLIP4CLIP"} and fire["datasets"] == ["MSRVTT"]  # mapped as by the CLI
        assert side["fire_json"]["file"] == "fire_labels.json"
        assert any(f["reason"] == "is this a cartoon?" for f in side["flags"])
        # where the CLI refuses (run "A" is no model of the data model), the admin reads why
        cfg = env.app.state.config
        mapping, cfg.model_names = cfg.model_names, {}
        try:
            page.click("#export-link")
            page.wait_for_url(re.compile(r"/admin/export$"))
            text = page.inner_text("main")
            assert "not written" in text and "--model-name" in text and "'A'" in text
            assert page.evaluate("document.documentElement.scrollWidth") <= width
            _shoot(page, env.tmp, f"export-refused-{width}")
        finally:
            cfg.model_names = mapping
    finally:
        page.close()


@pytest.mark.parametrize(("width", "height"), WIDTHS)
def test_explorer_shows_the_store_labels(env: Env, width: int, height: int) -> None:
    page = _page(env, width, height, env.admin)
    try:
        page.goto(f"{env.base}/explore?unjudged=1")
        rows = page.eval_on_selector_all("#queries tbody tr", "rs => rs.map(r => r.dataset.index)")
        assert rows == ["1"]  # q3's (v2) is labelled in the store: not unjudged without -l
        page.goto(f"{env.base}/explore/query/3")
        cells = page.locator("li[data-video='v2']")
        assert cells.count() == 2  # both runs
        assert {cells.nth(i).get_attribute("data-state") for i in range(2)} == {"irrelevant"}
        assert page.locator("input[name=pair][value='3:2']").count() == 0
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        assert _unnamed(page) == []
        _shoot(page, env.tmp, f"explore-store-labels-{width}")
    finally:
        page.close()


@pytest.fixture(scope="module")
def local_explorer(env: Env, shared_data) -> Iterator[str]:  # type: ignore[no-untyped-def]
    """``fireval explore`` on a real run of the bundled MSR-VTT 1k-A, as a user starts it."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    run = shared_data / "msrvtt" / "sims" / "clip4clip_msrvtt.npy"
    exe = Path(sys.executable).with_name("fireval")
    proc = subprocess.Popen(
        [str(exe), "explore", str(run), "-c", "example", "--port", str(port), "--no-checks"],
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
    )
    try:
        assert proc.stderr is not None
        for line in proc.stderr:  # the banner comes once the server is about to listen
            if "fireval explore: http://" in line:
                break
        else:
            raise AssertionError(f"fireval explore exited with {proc.wait()}")
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=20)


@pytest.mark.parametrize(("width", "height"), WIDTHS)
def test_local_explore_needs_no_login(env: Env, local_explorer: str, width: int, height: int) -> None:
    page = env.browser.new_page(viewport={"width": width, "height": height})
    try:
        for _ in range(100):  # the banner precedes the listening socket by a moment
            try:
                page.goto(f"{local_explorer}/")
                break
            except Exception:  # noqa: BLE001 - connection refused until uvicorn listens
                page.wait_for_timeout(100)
        assert page.url == f"{local_explorer}/explore"  # no login page
        assert page.locator("#queries tbody tr").count() == 50
        assert "local explorer" in page.inner_text("header")
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        assert _unnamed(page) == []
        _shoot(page, env.tmp, f"local-explore-{width}")
        page.click("#queries tbody tr:first-child a")
        page.wait_for_url(re.compile(r"/explore/query/0$"))
        assert page.locator(".run-col[data-run='clip4clip_msrvtt'] li").count() >= 10
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        _shoot(page, env.tmp, f"local-explore-query-{width}")
    finally:
        page.close()
