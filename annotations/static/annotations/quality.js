// The quality page's two behaviours (a static file: the site's CSP forbids inline scripts).
//
// 1. Drill-down: a click on a cell of the kappa heatmap opens the items where that pair of annotators
//    disagrees (a cell on the diagonal: where that annotator disagrees with gold and the others). The
//    names' user ids and the URL come from <script id="kappa-links" type="application/json">; the same
//    links are listed in the page for readers without JavaScript.
// 2. Live status: while the latest recompute or a qrels build is pending or running, poll the page's
//    status.json every two seconds and redraw each job's badge in place (`JobBadge.show`, evalplatform/jobs.js). When a
//    build finishes, the builds section is fetched again and swapped in (its counts and export links
//    appear, the page stays where it is); when a recompute finishes, the page reloads once for the new
//    figures and charts.
(function () {
  "use strict";
  var POLL_EVERY = 2000;
  var UNFINISHED = { pending: true, running: true };

  // --- drill-down from the heatmap -----------------------------------------------------------------

  function hookHeatmap(attempt) {
    var chart = document.getElementById("figure-kappa-chart");
    var source = document.getElementById("kappa-links");
    if (!chart || !source) return;
    if (typeof chart.on !== "function") {
      // charts.js draws the figure when the page has loaded; wait for Plotly to attach its events.
      if (attempt < 100) window.setTimeout(function () { hookHeatmap(attempt + 1); }, 100);
      return;
    }
    var links = JSON.parse(source.textContent);
    chart.on("plotly_click", function (event) {
      var point = event && event.points && event.points[0];
      if (!point) return;
      var a = links.ids[point.y];
      var b = links.ids[point.x];
      if (a === undefined || b === undefined) return;
      window.location.assign(links.url + "?a=" + a + (a === b ? "" : "&b=" + b));
    });
    chart.classList.add("clickable");
  }

  // --- live status -----------------------------------------------------------------------------------

  function watched() {
    return Array.prototype.filter.call(document.querySelectorAll(".job-status[data-job]"), function (element) {
      return UNFINISHED[element.dataset.status];
    });
  }

  function refreshBuilds(pageUrl) {
    return fetch(pageUrl, { credentials: "same-origin", headers: { Accept: "text/html" } })
      .then(function (response) {
        if (!response.ok) throw new Error("HTTP " + response.status);
        return response.text();
      })
      .then(function (html) {
        var fresh = new DOMParser().parseFromString(html, "text/html").getElementById("builds");
        var current = document.getElementById("builds");
        if (fresh && current) current.innerHTML = fresh.innerHTML;
      });
  }

  function poll(live) {
    fetch(live.dataset.statusUrl, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (response) {
        if (!response.ok) throw new Error("HTTP " + response.status);
        return response.json();
      })
      .then(function (state) {
        var buildFinished = false;
        var recomputeFinished = false;
        var builds = {};
        (state.builds || []).forEach(function (build) { builds[build.version] = build; });
        watched().forEach(function (element) {
          var next = element.dataset.job === "build" ? builds[element.dataset.build] : state.recompute;
          if (!next) return;
          var finished = !UNFINISHED[next.status];
          window.JobBadge.show(element, next);
          if (finished && element.dataset.job === "build") buildFinished = true;
          if (finished && element.dataset.job === "recompute") recomputeFinished = true;
        });
        if (recomputeFinished) {
          window.location.reload();
          return null;
        }
        return buildFinished ? refreshBuilds(live.dataset.pageUrl) : null;
      })
      .catch(function () { /* try again at the next tick */ })
      .then(function () { schedule(live); });
  }

  function schedule(live) {
    if (watched().length) window.setTimeout(function () { poll(live); }, POLL_EVERY);
  }

  function start() {
    hookHeatmap(0);
    var live = document.getElementById("quality-live");
    if (live) schedule(live);
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
