// Draw every server-built figure: <div class="chart" data-figure="ID"> takes the JSON of
// <script type="application/json" id="ID"> (written by Django's json_script) and plots it with the
// vendored plotly.js.
(function () {
  "use strict";
  function draw() {
    document.querySelectorAll(".chart[data-figure]").forEach(function (element) {
      var source = document.getElementById(element.dataset.figure);
      if (!source || !window.Plotly) return;
      var figure = JSON.parse(source.textContent);
      var config = Object.assign({ responsive: true, displaylogo: false }, figure.config || {});
      window.Plotly.newPlot(element, figure.data || [], figure.layout || {}, config);
    });
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", draw);
  } else {
    draw();
  }
})();
