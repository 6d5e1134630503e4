// The annotator's page: keyboard shortcuts, timing, video gating and tools, help overlay.
// No inline JS (the CSP forbids it); every action is a plain form post, so the page also works
// without this script (except the wait for the video, which only this script can observe).
(function () {
  "use strict";
  var started = Date.now();
  var $ = function (id) { return document.getElementById(id); };
  var status = $("status");
  var say = function (text) { if (status) { status.textContent = text; } };

  var bar = $("progress-bar");
  if (bar) { bar.style.width = Math.min(100, parseFloat(bar.dataset.percent || "0")) + "%"; }
  var form = $("label-form");
  var spent = $("time-spent");
  if (form && spent) {
    form.addEventListener("submit", function () { spent.value = String(Date.now() - started); });
  }

  // Prefetch of the next item's video (web/annotate_prefetch.py). Once this item's video can play
  // through (or has failed), ask the server which video the hand-out would give next and load it
  // into the hidden #next-video, which leaves it in the browser's cache for the next page's
  // player. A prediction only: nothing here decides or answers the next item; the next page shows
  // whatever the server hands out. data-state: idle, asking, loading, ready (can play through),
  // complete (all of it buffered), none (nothing to load), failed.
  var nextVideo = $("next-video");
  var prefetchStarted = false;
  var baseUrl = function (u) { return String(u || "").split("#")[0]; };
  var prefetch = function () {
    if (!nextVideo || prefetchStarted) { return; }
    prefetchStarted = true;
    var mark = function (s) { nextVideo.dataset.state = s; };
    mark("asking");
    fetch(nextVideo.dataset.peek, {
      credentials: "same-origin", cache: "no-store", headers: { Accept: "application/json" }
    }).then(function (r) {
      if (!r.ok) { throw new Error("peek: " + r.status); }
      return r.json();
    }).then(function (data) {
      var url = data && typeof data.video_url === "string" ? data.video_url : "";
      var current = $("player");
      if (!url || (current && baseUrl(current.getAttribute("src")) === baseUrl(url))) {
        mark("none");
        return;
      }
      var whole = function () {
        var b = nextVideo.buffered;
        if (b.length && nextVideo.duration && b.end(b.length - 1) >= nextVideo.duration - 0.05) {
          mark("complete");
        }
      };
      nextVideo.addEventListener("canplaythrough", function () {
        if (nextVideo.dataset.state === "loading") { mark("ready"); }
        whole();
      });
      nextVideo.addEventListener("progress", whole);
      nextVideo.addEventListener("error", function () { mark("failed"); });
      mark("loading");
      nextVideo.preload = "auto";
      nextVideo.src = url;
    }).catch(function () { mark("failed"); });
  };
  // after this item's own video (it keeps the bandwidth first), at the latest 2 s after it can play
  var prefetchSoon = function () { window.setTimeout(prefetch, 2000); };
  var curPlayer = $("player");
  if (nextVideo && curPlayer) {
    curPlayer.addEventListener("canplaythrough", prefetch);
    curPlayer.addEventListener("canplay", prefetchSoon);
    curPlayer.addEventListener("error", prefetch);
    if (curPlayer.readyState >= 4 || curPlayer.error) { prefetch(); }
    else if (curPlayer.readyState >= 3) { prefetchSoon(); }
  }

  // Relevant / Irrelevant only once the video can play; a video that cannot load is reported and
  // its skip records why ("video failed").
  var player = $("player");
  var judge = [$("btn-relevant"), $("btn-irrelevant")].filter(Boolean);
  var videoState = $("video-state");
  var setJudging = function (on) {
    judge.forEach(function (b) { b.disabled = !on; b.setAttribute("aria-disabled", on ? "false" : "true"); });
  };
  if (player && form && form.dataset.needsVideo === "yes") {
    var isReady = false;
    var ready = function () {  // canplay fires again after every seek: announce it once
      if (isReady || $("video-error")) { return; }
      isReady = true;
      setJudging(true);
      if (videoState) { videoState.textContent = "Video ready."; }
    };
    var failed = function () {
      if (!player.parentNode || $("video-error")) { return; }
      setJudging(false);
      var p = document.createElement("p");
      p.className = "novideo";
      p.id = "video-error";
      p.setAttribute("role", "alert");
      p.textContent = "The video could not be loaded (missing file or unsupported format). Skip the item: the skip records" +
        " \"video failed\".";
      player.hidden = true;  // keep the element (and its src) but drop the endless spinner
      player.parentNode.insertBefore(p, player.nextSibling);
      var reason = $("skip-reason");
      if (reason) { reason.value = "video failed"; }
      if (videoState) { videoState.textContent = "Video failed."; }
    };
    if (player.readyState >= 3 && !player.error) { ready(); } else { setJudging(false); }
    player.addEventListener("canplay", ready);
    player.addEventListener("error", failed);
    if (player.error) { failed(); }
  }

  // playback speed and frame stepping (one frame at ~25 fps; the element has no frame rate API)
  var FRAME = 1 / 25;
  var speed = $("speed");
  if (player && speed) {
    speed.addEventListener("change", function () {
      player.playbackRate = parseFloat(speed.value) || 1;
      say("Playback speed " + speed.value + "×.");
    });
  }
  var step = function (dir) {
    if (!player || player.hidden) { return; }
    player.pause();
    var t = Math.max(0, Math.min((player.duration || 0) || Infinity, player.currentTime + dir * FRAME));
    player.currentTime = t;
    if (videoState) { videoState.textContent = "Paused at " + t.toFixed(2) + " s."; }
  };
  var back = $("btn-frame-back");
  var fwd = $("btn-frame-fwd");
  if (back) { back.addEventListener("click", function () { step(-1); }); }
  if (fwd) { fwd.addEventListener("click", function () { step(1); }); }

  // help overlay on "?"
  var help = $("help");
  var lastFocus = null;
  var showHelp = function (on) {
    if (!help) { return; }
    if (on) {
      lastFocus = document.activeElement;
      help.hidden = false;
      var close = $("btn-help-close");
      if (close) { close.focus(); }
    } else {
      help.hidden = true;
      if (lastFocus && lastFocus.focus) { lastFocus.focus(); }
    }
  };
  var closeBtn = $("btn-help-close");
  if (closeBtn) { closeBtn.addEventListener("click", function () { showHelp(false); }); }

  var flagBox = $("flag-box");
  var keys = { r: "btn-relevant", i: "btn-irrelevant", s: "btn-skip", u: "btn-undo" };
  var busy = false;
  document.addEventListener("keydown", function (ev) {
    if (ev.ctrlKey || ev.metaKey || ev.altKey || busy) { return; }
    var t = ev.target;
    if (t && (t.tagName === "INPUT" || t.tagName === "TEXTAREA" || t.tagName === "SELECT")) { return; }
    if (help && !help.hidden) {
      if (ev.key === "Escape" || ev.key === "?") { ev.preventDefault(); showHelp(false); }
      return;
    }
    if (ev.key === "?") { ev.preventDefault(); showHelp(true); return; }
    if (ev.key === ",") { ev.preventDefault(); step(-1); return; }
    if (ev.key === ".") { ev.preventDefault(); step(1); return; }
    var k = ev.key.toLowerCase();
    if (k === "g") { ev.preventDefault(); window.location.href = "/guidelines"; return; }
    if (k === "f" && flagBox) {
      ev.preventDefault();
      flagBox.open = true;
      var reason = $("flag-reason");
      if (reason) { reason.focus(); }
      return;
    }
    var btn = keys[k] && $(keys[k]);
    if (btn && btn.disabled) {
      ev.preventDefault();
      say("Wait for the video to load before answering (or skip).");
      return;
    }
    if (btn) { ev.preventDefault(); busy = true; btn.click(); }
  });
})();
