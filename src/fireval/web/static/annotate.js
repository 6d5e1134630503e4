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
