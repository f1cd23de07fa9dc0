// Draw every server-built figure: <div class="chart" data-figure="ID"> takes the JSON of
// <script type="application/json" id="ID"> (written by Django's json_script) and plots it with the
// vendored plotly.js. A figure names its template (layout.template, a string such as "plotly_white"): the
// page holds each template once, in <script type="application/json" id="plotly-templates">
// ({% plotly_script %}), and the name is replaced by the template itself before drawing. A figure of a
// fixed height (layout.height) sizes its container to it: a stylesheet's placeholder height (reserved
// before the plot is drawn) never leaves white space under a shorter plot.
(function () {
  "use strict";
  function draw() {
    var templates = document.getElementById("plotly-templates");
    document.querySelectorAll(".chart[data-figure]").forEach(function (element) {
      var source = document.getElementById(element.dataset.figure);
      if (!source || !window.Plotly) return;
      var figure = JSON.parse(source.textContent);
      var layout = figure.layout || {};
      if (typeof layout.template === "string") {
        // A copy of its own for each figure: plotly.js keeps the layout object it is given.
        var template = templates ? JSON.parse(templates.textContent)[layout.template] : undefined;
        if (template) layout.template = template;
        else delete layout.template;
      }
      if (typeof layout.height === "number") element.style.minHeight = layout.height + "px";
      var config = Object.assign({ responsive: true, displaylogo: false }, figure.config || {});
      window.Plotly.newPlot(element, figure.data || [], layout, config);
    });
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", draw);
  } else {
    draw();
  }
})();
