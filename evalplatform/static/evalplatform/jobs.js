// Keep the status of pending and running jobs current without reloading the page: every element
// <span class="job" data-job-url="URL"> polls URL (the job's state as JSON) until the job is done or
// failed, and redraws its badge, progress, note and error. With data-reload-when-done, the page reloads
// once the job has finished, so the results it stored appear.
// `window.JobBadge.show(element, state)` redraws one badge (evalplatform/_job_badge.html) from a job's
// state, for pages that poll their jobs another way (the judging project's quality page).
(function () {
  "use strict";
  var FIRST_DELAY = 1000;
  var MAX_DELAY = 10000;

  function show(element, state) {
    var badge = element.querySelector(".job-badge");
    var bar = element.querySelector("progress");
    var percent = element.querySelector(".job-percent");
    var note = element.querySelector(".job-note");
    var error = element.querySelector(".job-error");
    element.dataset.status = state.status;
    badge.textContent = state.label || state.status;
    badge.className = "badge job-badge status-" + state.status;
    var known = state.status === "running" && state.percent !== null;
    bar.hidden = !known;
    if (known) bar.value = state.percent;
    percent.textContent = known ? state.percent + "%" : "";
    note.textContent = state.status === "running" ? state.note || "" : "";
    error.textContent = state.status === "failed" ? state.error || "" : "";
  }

  window.JobBadge = { show: show };

  function poll(element, delay) {
    fetch(element.dataset.jobUrl, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (response) {
        if (!response.ok) throw new Error("HTTP " + response.status);
        return response.json();
      })
      .then(function (state) {
        show(element, state);
        if (state.status === "done" || state.status === "failed") {
          if ("reloadWhenDone" in element.dataset) window.location.reload();
          return;
        }
        window.setTimeout(function () { poll(element, Math.min(delay * 1.5, MAX_DELAY)); }, delay);
      })
      .catch(function () {
        window.setTimeout(function () { poll(element, MAX_DELAY); }, MAX_DELAY);
      });
  }

  function start() {
    document.querySelectorAll(".job[data-job-url]").forEach(function (element) {
      if (element.dataset.status === "pending" || element.dataset.status === "running") {
        window.setTimeout(function () { poll(element, FIRST_DELAY); }, FIRST_DELAY);
      }
    });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
