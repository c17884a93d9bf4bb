// imagegen console: the few things that need JavaScript. Everything else
// works without it. No inline script: the Content-Security-Policy allows
// only this file.
(function () {
  "use strict";

  // Copy buttons: <button data-copy="element-id">.
  function setUpCopy() {
    document.querySelectorAll("button[data-copy]").forEach(function (btn) {
      var target = document.getElementById(btn.getAttribute("data-copy"));
      if (!target || !navigator.clipboard) { return; }
      btn.hidden = false;
      btn.addEventListener("click", function () {
        navigator.clipboard.writeText(target.textContent).then(function () {
          btn.textContent = "Copied";
        }, function () {
          btn.textContent = "Select and copy";
        });
      });
    });
  }

  // A task page follows its task: long-polls the console's JSON endpoint
  // (which answers as soon as the task finishes, or after ?wait seconds)
  // until the task has finished, then shows the images or the error.
  function setUpTask() {
    var box = document.getElementById("task");
    if (!box || box.hasAttribute("data-terminal")) { return; }
    var url = box.getAttribute("data-poll");
    var hint = document.getElementById("live-hint");
    if (hint) { hint.textContent = "Following the task live…"; }
    var failures = 0;

    function show(t) {
      var status = document.getElementById("status");
      status.textContent = t.status;
      status.className = "status status-" + t.status;
      document.getElementById("balance").textContent = String(t.credits_remaining);
      Object.keys(t.shown || {}).forEach(function (k) { // progress and timings, as the server words them
        var el = document.getElementById("shown-" + k);
        if (el && t.shown[k]) { el.textContent = t.shown[k]; }
      });
      var bar = document.getElementById("progress-bar");
      if (bar) { // the model's progress, while it reports one
        bar.hidden = t.terminal || !(t.progress > 0);
        if (t.progress > 0) { bar.value = t.progress; }
      }
      if (!t.terminal) { return; }
      var cancel = document.getElementById("cancel");
      if (cancel) { cancel.remove(); }
      if (hint) { hint.remove(); }
      if (t.error) {
        var err = document.getElementById("task-error");
        err.textContent = t.error + (t.error_code ? " (" + t.error_code + ")" : "");
        err.hidden = false;
      }
      var images = document.getElementById("images");
      (t.images || []).forEach(function (u, i) {
        var fig = document.createElement("figure");
        var a = document.createElement("a");
        a.href = u;
        var img = document.createElement("img");
        img.src = u;
        img.alt = "generated image " + i;
        a.appendChild(img);
        var cap = document.createElement("figcaption");
        var dl = document.createElement("a");
        dl.href = u;
        dl.setAttribute("download", "");
        dl.textContent = "Download";
        cap.appendChild(dl);
        fig.appendChild(a);
        fig.appendChild(cap);
        images.appendChild(fig);
      });
    }

    function poll() {
      // A running task's progress moves without the task ending: come back
      // every few seconds while it runs (the server records it every 2 s).
      var wait = document.getElementById("status").textContent === "processing" ? 4 : 20;
      fetch(url + "?wait=" + wait, { credentials: "same-origin", headers: { "Accept": "application/json" } })
        .then(function (res) {
          if (res.status === 429) { // too many waits or reads of this session: come back when told
            var after = parseInt(res.headers.get("Retry-After"), 10);
            return { later: 1000 * (after > 0 ? after : 5) };
          }
          if (!res.ok) { throw new Error("HTTP " + res.status); }
          return res.json();
        })
        .then(function (t) {
          failures = 0;
          if (t.later) { setTimeout(poll, t.later); return; }
          show(t);
          if (!t.terminal) { poll(); }
        })
        .catch(function () {
          failures++;
          if (failures > 5) {
            if (hint) { hint.textContent = "Live updates stopped; reload the page to see the task."; }
            return;
          }
          setTimeout(poll, 1000 * failures);
        });
    }
    poll();
  }

  document.addEventListener("DOMContentLoaded", function () {
    setUpCopy();
    setUpTask();
  });
})();
