// Step-by-step mode: a story's rows are revealed one at a time. The current step is
// highlighted, the ones before it dimmed, the ones after it hidden; the lesson ("why it
// broke") waits for the last step; the state after the step shows beside the caption.
// "All steps" is its own mode, not the last step. Keys act only on the story that has
// focus (click it or tab to it), so the page still scrolls by keyboard; the address
// (#step=N, or #story=S&step=N past the first story) links to a step, and #play opens
// the first story in lecture mode (one step every few seconds). Without script
// the whole diagram shows, as in print.
(function () {
  "use strict";
  var stories = Array.prototype.slice.call(document.querySelectorAll("section.story"));
  function rowsOf(sec) { return sec.querySelectorAll("svg.seq g.row"); }
  function lastOf(sec) {
    var rows = rowsOf(sec);
    var last = 0;
    for (var i = 0; i < rows.length; i++) { last = Math.max(last, Number(rows[i].getAttribute("data-step"))); }
    return last;
  }
  function link(sec, k) {
    if (!window.history || !history.replaceState) { return; }
    var s = stories.indexOf(sec);
    var h = k === null ? "" : (s > 0 ? "#story=" + s + "&step=" + k : "#step=" + k);
    try { history.replaceState(null, "", h || window.location.pathname + window.location.search); } catch (e) { /* a file: URL may refuse */ }
  }
  // k === null: every step at once.
  function show(sec, k, keep) {
    var rows = rowsOf(sec);
    var last = lastOf(sec);
    var all = k === null;
    if (!all) { k = Math.max(0, Math.min(last, k)); }
    sec.dataset.at = all ? "all" : String(k);
    for (var i = 0; i < rows.length; i++) {
      var n = Number(rows[i].getAttribute("data-step"));
      rows[i].classList.toggle("future", !all && n > k);
      rows[i].classList.toggle("past", !all && n < k);
      rows[i].classList.toggle("current", !all && n === k);
    }
    var items = sec.querySelectorAll("ol.steps > li");
    var text = "";
    var state = "";
    for (var j = 0; j < items.length; j++) {
      var on = !all && Number(items[j].getAttribute("data-step")) === k;
      items[j].classList.toggle("on", on);
      if (on) {
        text = items[j].getAttribute("data-say") || "";
        var pre = items[j].querySelector("pre");
        state = pre ? pre.textContent : "";
      }
    }
    var why = sec.querySelector(".why");
    if (why) { why.classList.toggle("later", !all && k < last); }
    var cap = sec.querySelector(".caption");
    if (cap) { cap.textContent = all ? "All steps." : "Step " + k + " of " + last + ": " + text; }
    var panel = sec.querySelector(".statepanel");
    if (panel) {
      panel.hidden = all || !state;
      var out = panel.querySelector("pre");
      if (out) { out.textContent = state; }
    }
    if (!keep) { link(sec, all ? null : k); }
  }
  function at(sec) { return sec.dataset.at === "all" ? null : Number(sec.dataset.at || 0); }
  // Lecture mode: from the start (or the current step), one step every few seconds,
  // a fault's step held longer; it stops at the last step, where the lesson shows.
  var PAUSE_MS = 2600;
  function stop(sec) {
    if (sec.lecture) { clearTimeout(sec.lecture); sec.lecture = null; }
    var b = sec.querySelector("button.play");
    if (b) { b.textContent = "▶ play"; }
    sec.classList.remove("playing");
  }
  function play(sec) {
    var k = at(sec);
    if (k === null || k >= lastOf(sec)) { k = 0; }
    show(sec, k);
    var b = sec.querySelector("button.play");
    if (b) { b.textContent = "❚❚ pause"; }
    sec.classList.add("playing");
    var tick = function () {
      var n = at(sec);
      if (n === null || n >= lastOf(sec)) { stop(sec); return; }
      show(sec, n + 1);
      if (n + 1 >= lastOf(sec)) { stop(sec); return; }
      var fault = sec.querySelector("ol.steps > li.fault[data-step=\"" + (n + 1) + "\"]");
      sec.lecture = setTimeout(tick, fault ? PAUSE_MS * 1.6 : PAUSE_MS);
    };
    sec.lecture = setTimeout(tick, PAUSE_MS);
  }
  function toggle(sec) { if (sec.lecture) { stop(sec); } else { play(sec); } }
  stories.forEach(function (sec) {
    if (!sec.querySelector(".controls")) { return; }
    sec.setAttribute("tabindex", "0");
    // Any other control takes the story out of lecture mode.
    var on = function (sel, f) {
      var b = sec.querySelector(sel);
      if (b) { b.addEventListener("click", function () { if (sel !== "button.play") { stop(sec); } f(); sec.focus({ preventScroll: true }); }); }
    };
    on("button.play", function () { toggle(sec); });
    // From "all steps", next starts at the beginning and previous at the end.
    on("button.prev", function () { var k = at(sec); show(sec, k === null ? lastOf(sec) : k - 1); });
    on("button.next", function () { var k = at(sec); show(sec, k === null ? 0 : k + 1); });
    on("button.first", function () { show(sec, 0); });
    on("button.all", function () { show(sec, null); });
    var items = sec.querySelectorAll("ol.steps > li > span");
    for (var i = 0; i < items.length; i++) {
      items[i].addEventListener("click", function (e) {
        show(sec, Number(e.currentTarget.parentNode.getAttribute("data-step")));
      });
    }
    sec.addEventListener("keydown", function (e) {
      if (e.altKey || e.ctrlKey || e.metaKey || e.target !== sec) { return; }
      if (e.key === " ") { toggle(sec); e.preventDefault(); return; }
      stop(sec);
      var k = at(sec);
      if (e.key === "ArrowRight" || e.key === "n") { show(sec, k === null ? 0 : k + 1); }
      else if (e.key === "ArrowLeft" || e.key === "p") { show(sec, k === null ? lastOf(sec) : k - 1); }
      else if (e.key === "Home") { show(sec, 0); }
      else if (e.key === "End") { show(sec, null); }
      else { return; }
      e.preventDefault();
    });
    show(sec, null, true);
  });
  // Read before anything moves the address: playing rewrites it step by step.
  var opened = window.location.hash;
  if (opened === "#play" && stories[0] && stories[0].querySelector(".controls")) {
    play(stories[0]);
    stories[0].scrollIntoView();
  }
  // A deep link: #step=3 (the first story), #story=1&step=3; also how a run page's
  // rows and the model's steps link to each other, so it is followed on every change.
  function follow() {
    var m = /^#(?:story=(\d+)&)?step=(\d+)$/.exec(window.location.hash || "");
    if (!m) { return; }
    var target = stories[Number(m[1] || 0)];
    if (target && target.querySelector(".controls")) {
      stop(target);
      show(target, Number(m[2]), true);
      target.scrollIntoView();
    }
  }
  if (opened !== "#play") { follow(); }
  window.addEventListener("hashchange", follow);
  document.documentElement.setAttribute("data-diagram", "ready");
  // The whole page's height once every step shows: ci/render-pages.sh sizes its
  // screenshot to it, so a long story is one picture rather than its first screen.
  document.documentElement.setAttribute("data-height", String(document.documentElement.scrollHeight));
  // How far the page, or any diagram's box, would scroll sideways at this window's
  // width (0: it fits); the tests read it at 1400 px.
  var wide = document.documentElement.scrollWidth - document.documentElement.clientWidth;
  Array.prototype.forEach.call(document.querySelectorAll(".scroll"), function (b) {
    wide = Math.max(wide, b.scrollWidth - b.clientWidth);
  });
  document.documentElement.setAttribute("data-overflow", String(Math.max(0, wide)));
})();
