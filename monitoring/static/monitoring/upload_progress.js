// A form with data-upload-progress sends its file by XMLHttpRequest, so the browser reports the upload's
// progress (a <progress> bar and a percentage). The server answers JSON: {"redirect": URL} once kept, or
// {"errors": {field: [message, ...]}} shown beside each field. Without this script the form posts as usual.
(function () {
  "use strict";

  function showErrors(form, errors) {
    form.querySelectorAll(".upload-field-error").forEach(function (box) { box.textContent = ""; });
    var general = form.querySelector(".form-errors");
    general.textContent = "";
    Object.keys(errors).forEach(function (name) {
      var holder = form.querySelector('[data-field="' + name + '"] .upload-field-error');
      (holder || general).textContent = errors[name].join(" ");
    });
  }

  function send(form, event) {
    event.preventDefault();
    var bar = form.querySelector("progress");
    var percent = document.getElementById("upload-percent");
    var button = form.querySelector("button[type=submit]");
    var request = new XMLHttpRequest();
    request.open("POST", form.action || window.location.href);
    request.setRequestHeader("Accept", "application/json");
    request.upload.addEventListener("progress", function (progress) {
      if (!progress.lengthComputable) return;
      var value = Math.round((100 * progress.loaded) / progress.total);
      bar.hidden = false;
      bar.value = value;
      percent.textContent = value < 100 ? value + "% uploaded" : "uploaded; checking the file…";
    });
    request.addEventListener("load", function () {
      var body = null;
      try { body = JSON.parse(request.responseText); } catch (error) { body = null; }
      if (body && body.redirect) { window.location.assign(body.redirect); return; }
      button.disabled = false;
      bar.hidden = true;
      percent.textContent = "";
      showErrors(form, (body && body.errors) || { __all__: ["The upload failed (HTTP " + request.status + ")."] });
    });
    request.addEventListener("error", function () {
      button.disabled = false;
      showErrors(form, { __all__: ["The upload did not reach the server; try again."] });
    });
    button.disabled = true;
    request.send(new FormData(form));
  }

  function start() {
    document.querySelectorAll("form[data-upload-progress]").forEach(function (form) {
      form.addEventListener("submit", function (event) { send(form, event); });
    });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
