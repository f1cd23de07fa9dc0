// The alert rule form offers the metrics of the chosen series' family: the series select (one of the
// team's series) or, when it is empty, the kind of a new series decides the family, and the metric
// field's datalist is refilled with that family's metric names (`RuleForm.choosing`, as JSON).
// The subject fields of the other kinds are hidden while a kind is chosen. Without this script the form
// still works: the metric is typed, and the server refuses another family's metric, naming the field.
(function () {
  "use strict";
  var SUBJECTS = {
    stream: ["stream"], run: ["qrels", "run_name"], recsys: ["set_name"], fraud: ["set_name"],
    project: ["project"], annotator: ["project", "username"]
  };
  var ALL = ["stream", "qrels", "run_name", "set_name", "project", "username"];

  function fieldOf(form, name) {
    var input = form.querySelector("[name='" + name + "']");
    return input ? input.closest(".field") : null;
  }

  function start() {
    var data = document.getElementById("rule-form-choosing");
    var form = document.getElementById("rule-form");
    var list = document.getElementById("rule-metrics");
    if (!data || !form || !list) {
      return;
    }
    var choosing = JSON.parse(data.textContent);
    var series = form.querySelector("[name='series']");
    var kind = form.querySelector("[name='kind']");

    function update() {
      var chosen = series && series.value ? series.value : "";
      var family = chosen ? choosing.series[chosen] : (kind && kind.value ? choosing.kinds[kind.value] : "");
      var shown = chosen ? [] : (kind && kind.value ? SUBJECTS[kind.value] || [] : ALL);
      ALL.forEach(function (name) {
        var field = fieldOf(form, name);
        if (field) {
          field.hidden = shown.indexOf(name) < 0;
        }
      });
      var kindField = fieldOf(form, "kind");
      if (kindField) {
        kindField.hidden = Boolean(chosen);
      }
      list.textContent = "";
      var names = family ? choosing.metrics[family] || [] : [];
      names.forEach(function (name) {
        var option = document.createElement("option");
        option.value = name;
        list.appendChild(option);
      });
      form.dataset.family = family || "";
    }

    if (series) {
      series.addEventListener("change", update);
    }
    if (kind) {
      kind.addEventListener("change", update);
    }
    update();
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
