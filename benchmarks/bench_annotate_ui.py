"""Time from an answer to the next video's first frame, with and without prefetch (not a test).

``.venv/bin/python benchmarks/bench_annotate_ui.py [--items N] [--kbps K] [--latency-ms L]
[--think S] [--seconds T] [--screenshots DIR]``

Headless Debian Chromium (``/usr/bin/chromium`` through Playwright; no browser is downloaded)
annotates a fresh SQLite store twice over the same clips, once with the app's prefetch
(``WebConfig.prefetch``, :mod:`fireval.web.annotate_prefetch`) and once without, each arm in a
new browser profile (an empty cache). The page's network is throttled through the DevTools
protocol (``Network.emulateNetworkConditions``: ``--kbps`` download, ``--latency-ms`` per
request; loopback is otherwise too fast for a download to show; ``--kbps 0`` turns it off), and
the clips are larger than the tests' (``--seconds`` of 640x360 noise at 25 fps, VP8, recorded
once by the browser itself with ``MediaRecorder``, then copied under one file name per item, so
every item has its own URL). These WebM files have no cue index; in the runs seen, the next page's
first frame came only once the whole file had arrived, so without prefetch the figure is close
to one clip's download time.

Per answer: the annotator waits until the current video can play plus ``--think`` seconds (the
time anyone looks at a clip; the prefetch runs meanwhile), then presses Relevant. The time from
the click (taken in the page just before ``click()``) to the next page's player firing
``loadeddata`` (its first frame; recorded by an init script on the new page) is one sample.
Both clocks are ``performance.timeOrigin + performance.now()`` (epoch milliseconds). The
DevTools events also give the bytes each video request took over the network.

Each arm runs in a new persistent browser profile (a disk cache, empty at the start), as a real
annotator's browser has. Prints both arms' medians and means, the ratio (without / with) from
this one run, and the network bytes of the next page's own video request after each click.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import shutil
import socket
import statistics
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

# a noise clip: every frame fresh random pixels, so VP8 cannot compress it to nothing
RECORD_JS = """async ([seconds, bitrate]) => {
  const c = document.createElement('canvas'); c.width = 640; c.height = 360;
  const g = c.getContext('2d');
  const rec = new MediaRecorder(c.captureStream(25),
                                {mimeType: 'video/webm;codecs=vp8', videoBitsPerSecond: bitrate});
  const chunks = [];
  rec.ondataavailable = e => chunks.push(e.data);
  const img = g.createImageData(640, 360);
  const draw = () => {
    const d = new Uint32Array(img.data.buffer);
    for (let k = 0; k < d.length; k++) { d[k] = (Math.random() * 0xffffffff) | 0xff000000; }
    g.putImageData(img, 0, 0);
  };
  draw(); const timer = setInterval(draw, 40);
  rec.start();
  await new Promise(r => setTimeout(r, seconds * 1000));
  rec.stop(); clearInterval(timer);
  await new Promise(r => rec.onstop = r);
  const b = new Uint8Array(await new Blob(chunks).arrayBuffer());
  let s = ''; for (let k = 0; k < b.length; k += 8192) { s += String.fromCharCode.apply(null, b.subarray(k, k + 8192)); }
  return btoa(s);
}"""

# on every page: when the player shows its first frame (media events do not bubble: capture)
FIRST_FRAME_JS = """
document.addEventListener('loadeddata', (e) => {
  if (e.target && e.target.id === 'player' && window.__firstFrame === undefined) {
    window.__firstFrame = performance.timeOrigin + performance.now();
  }
}, true);
"""

CLICK_JS = """() => {
  const t = performance.timeOrigin + performance.now();
  document.getElementById('btn-relevant').click();
  return t;
}"""


@contextlib.contextmanager
def serve(app: Any) -> Iterator[str]:
    import uvicorn

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
        yield f"http://127.0.0.1:{port}"
    finally:
        srv.should_exit = True
        th.join(timeout=10)


def wait_until(page: Any, expression: str, timeout: float = 30.0) -> Any:
    """Poll a JS expression from Python (the app's CSP forbids page.wait_for_function's eval)."""
    deadline = time.monotonic() + timeout
    while not (value := page.evaluate(expression)):
        if time.monotonic() > deadline:
            raise RuntimeError(f"not true after {timeout} s: {expression}")
        page.wait_for_timeout(5)
    return value


def run_arm(pw: Any, work: Path, clip: bytes, args: argparse.Namespace, prefetch: bool) -> dict[str, Any]:
    from fireval.judging.pool import PoolItem
    from fireval.judging.store import Store
    from fireval.web.app import WebConfig, create_app

    arm = work / ("with" if prefetch else "without")
    videos = arm / "videos"
    videos.mkdir(parents=True)
    for k in range(args.items):
        (videos / f"clip{k}.webm").write_bytes(clip)
    url = f"sqlite:///{arm / 'store.db'}"
    st = Store(url)
    st.add_items([PoolItem(f"caption {k}", [f"c{k}"], f"clip{k}", {"R": 1}) for k in range(args.items)], "B")
    _, token = st.add_annotator("ann")
    st.close()
    app = create_app(
        WebConfig(
            db_url=url, dataset="B", video_dir=videos, video_ext=".webm", prefetch=prefetch, gold_rate=0
        )
    )
    samples: list[float] = []
    # network bytes of video responses, per (answer number, URL): 0 = the first page
    net: dict[tuple[int, str], int] = {}
    phase = [0]
    with serve(app) as base:
        # a persistent profile (new and empty per arm): a real browser's disk cache; Playwright's
        # default contexts keep an in-memory cache that stores no entry above about 1.3 MB
        ctx = pw.chromium.launch_persistent_context(
            str(arm / "profile"),
            executable_path=CHROMIUM,
            args=ARGS,
            viewport={"width": 1400, "height": 900},
            base_url=base,
        )
        ctx.add_init_script(FIRST_FRAME_JS)
        page = ctx.new_page()
        cdp = ctx.new_cdp_session(page)
        cdp.send("Network.enable")
        if args.kbps > 0:  # 0: no throttling at all (loopback speed)
            cdp.send(
                "Network.emulateNetworkConditions",
                {
                    "offline": False,
                    "latency": args.latency_ms,
                    "downloadThroughput": args.kbps * 1000 / 8,
                    "uploadThroughput": args.kbps * 1000 / 8,
                },
            )
        started: dict[str, tuple[int, str]] = {}

        def on_request(ev: dict[str, Any]) -> None:
            if "/videos/" in ev["request"]["url"]:
                started[ev["requestId"]] = (phase[0], ev["request"]["url"].split("/videos/")[1])

        def on_data(ev: dict[str, Any]) -> None:  # every chunk, also of requests cancelled later
            key = started.get(ev["requestId"])
            if key is not None:
                net[key] = net.get(key, 0) + int(ev.get("encodedDataLength", 0))

        cdp.on("Network.requestWillBeSent", on_request)
        cdp.on("Network.dataReceived", on_data)
        page.goto("/login")
        page.fill("input[name=token]", token)
        with page.expect_navigation():
            page.click("button[type=submit]")
        if page.locator("#btn-guidelines-seen").count():
            with page.expect_navigation():
                page.click("#btn-guidelines-seen")
        shown: list[str] = []
        for k in range(args.items - 1):
            page.wait_for_selector("#btn-relevant:enabled", timeout=60_000)
            shown.append(str(page.get_attribute("#item", "data-video-id")))
            page.wait_for_timeout(args.think * 1000)
            if prefetch and k == 0 and args.screenshots:
                Path(args.screenshots).mkdir(parents=True, exist_ok=True)
                page.screenshot(
                    path=str(Path(args.screenshots) / "bench-annotate-prefetch.png"), full_page=True
                )
            phase[0] = k + 1
            with page.expect_navigation():
                t0 = page.evaluate(CLICK_JS)
            t1 = wait_until(page, "window.__firstFrame")
            samples.append(t1 - t0)
            page.wait_for_timeout(200)  # let the DevTools events of the first frame's requests arrive
        ctx.close()
    assert shown == [f"clip{k}" for k in range(args.items - 1)], shown
    # network bytes the next page's player fetched for its own video after the click
    after = [net.get((k, f"clip{k}.webm"), 0) for k in range(1, args.items)]
    return {"samples": samples, "after": after, "total": sum(net.values())}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--items", type=int, default=8, help="items annotated per arm (answers: items - 1)")
    ap.add_argument("--kbps", type=int, default=8000, help="throttled download speed, kbit/s (0: none)")
    ap.add_argument("--latency-ms", type=int, default=40, help="added latency per request")
    ap.add_argument("--think", type=float, default=4.0, help="seconds spent on each item after it can play")
    ap.add_argument("--seconds", type=float, default=3.0, help="clip length (noise, 640x360)")
    ap.add_argument("--screenshots", default=None, help="directory for a screenshot of the page")
    args = ap.parse_args()

    from playwright.sync_api import sync_playwright

    work = Path(tempfile.mkdtemp(prefix="fireval-bench-ui-"))
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            try:
                maker = browser.new_page()
                clip = base64.b64decode(maker.evaluate(RECORD_JS, [args.seconds, 4_000_000]))
                maker.close()
            finally:
                browser.close()
            net = f"{args.kbps} kbit/s, +{args.latency_ms} ms" if args.kbps > 0 else "not throttled"
            print(
                f"clip: {len(clip) / 1e6:.2f} MB, {args.seconds:g} s; network {net}; "
                f"{args.items - 1} answers per arm, {args.think:g} s per item"
            )
            res = {}
            for prefetch in (False, True):  # the arm without first: no warm-up favours prefetch
                res[prefetch] = run_arm(p, work, clip, args, prefetch)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for prefetch in (False, True):
        r = res[prefetch]
        s = r["samples"]
        print(
            f"{'with' if prefetch else 'without'} prefetch: answer click -> next first frame "
            f"median {statistics.median(s):.0f} ms, mean {statistics.fmean(s):.0f} ms, "
            f"min {min(s):.0f}, max {max(s):.0f} (n={len(s)}); the next page's video over the network "
            f"after the click: {statistics.fmean(r['after']) / 1e3:.0f} kB mean ({len(clip) / 1e3:.0f} kB "
            f"each); all video bytes {r['total'] / 1e6:.1f} MB"
        )
    ratio = statistics.median(res[False]["samples"]) / statistics.median(res[True]["samples"])
    print(f"ratio without / with prefetch (medians, one run): {ratio:.2f}x")


if __name__ == "__main__":
    main()
