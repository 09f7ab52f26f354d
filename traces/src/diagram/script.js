// Step-by-step mode: each story's rows are revealed one at a time (→/n/space next,
// ←/p previous, Home the initial state, End everything); without script the whole
// diagram shows, as in print.
(function () {
  "use strict";
  var stories = Array.prototype.slice.call(document.querySelectorAll("section.story"));
  var active = stories[0] || null;
  function show(sec, k) {
    var rows = sec.querySelectorAll("svg.seq g.row");
    var last = rows.length - 1;
    k = Math.max(0, Math.min(last, k));
    sec.dataset.at = String(k);
    for (var i = 0; i < rows.length; i++) {
      var n = Number(rows[i].getAttribute("data-step"));
      rows[i].classList.toggle("future", n > k);
      rows[i].classList.toggle("current", n === k && k !== last);
    }
    var items = sec.querySelectorAll("ol.steps > li");
    var text = "";
    for (var j = 0; j < items.length; j++) {
      var on = Number(items[j].getAttribute("data-step")) === k;
      items[j].classList.toggle("on", on && k !== last);
      if (on) { text = items[j].getAttribute("data-say") || ""; }
    }
    var cap = sec.querySelector(".caption");
    if (cap) { cap.textContent = (k === last ? "All steps. " : "Step " + k + " of " + last + ": ") + text; }
  }
  stories.forEach(function (sec) {
    var at = function () { return Number(sec.dataset.at || 0); };
    var on = function (sel, f) { var b = sec.querySelector(sel); if (b) { b.addEventListener("click", function () { active = sec; f(); }); } };
    on("button.prev", function () { show(sec, at() - 1); });
    on("button.next", function () { show(sec, at() + 1); });
    on("button.first", function () { show(sec, 0); });
    on("button.all", function () { show(sec, 1e9); });
    sec.addEventListener("click", function () { active = sec; });
    show(sec, 1e9);
  });
  document.addEventListener("keydown", function (e) {
    if (!active || e.altKey || e.ctrlKey || e.metaKey) { return; }
    var k = Number(active.dataset.at || 0);
    if (e.key === "ArrowRight" || e.key === "n" || e.key === " " || e.key === "PageDown") { show(active, k + 1); }
    else if (e.key === "ArrowLeft" || e.key === "p" || e.key === "PageUp") { show(active, k - 1); }
    else if (e.key === "Home") { show(active, 0); }
    else if (e.key === "End") { show(active, 1e9); }
    else { return; }
    e.preventDefault();
  });
  document.documentElement.setAttribute("data-diagram", "ready");
  // The whole page's height once every step shows: ci/render-pages.sh sizes its
  // screenshot to it, so a long story is one picture rather than its first screen.
  document.documentElement.setAttribute("data-height", String(document.documentElement.scrollHeight));
})();
