// Keyboard shortcuts and timing for the annotator view (no inline JS: the CSP forbids it).
(function () {
  "use strict";
  var started = Date.now();
  var bar = document.getElementById("progress-bar");
  if (bar) { bar.style.width = Math.min(100, parseFloat(bar.dataset.percent || "0")) + "%"; }
  var form = document.getElementById("label-form");
  var spent = document.getElementById("time-spent");
  if (form && spent) {
    form.addEventListener("submit", function () { spent.value = String(Date.now() - started); });
  }
  // A missing or unplayable video would spin forever: say so, so the annotator can skip.
  var player = document.getElementById("player");
  var item = document.getElementById("item");
  if (player) {
    var failed = function () {
      if (!player.parentNode || document.getElementById("video-error")) { return; }
      var p = document.createElement("p");
      p.className = "novideo";
      p.id = "video-error";
      p.textContent = "Video " + ((item && item.dataset.videoId) || "") +
        " could not be loaded (missing file or unsupported format). Skip the item if you cannot judge it.";
      player.hidden = true;  // keep the element (and its src) but drop the endless spinner
      player.parentNode.insertBefore(p, player.nextSibling);
    };
    player.addEventListener("error", failed);
    if (player.error) { failed(); }
  }
  var keys = { r: "btn-relevant", i: "btn-irrelevant", s: "btn-skip", u: "btn-undo" };
  var busy = false;
  document.addEventListener("keydown", function (ev) {
    if (ev.ctrlKey || ev.metaKey || ev.altKey || busy) { return; }
    var t = ev.target;
    if (t && (t.tagName === "INPUT" || t.tagName === "TEXTAREA" || t.tagName === "SELECT")) { return; }
    var id = keys[ev.key.toLowerCase()];
    var btn = id && document.getElementById(id);
    if (btn) { ev.preventDefault(); busy = true; btn.click(); }
  });
})();
