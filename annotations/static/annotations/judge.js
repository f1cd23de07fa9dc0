// Keyboard shortcuts, the minimum-time countdown and the guidelines dialog of the judging page.
// The page works without this file: every action is a plain form POST. The server enforces the
// minimum time; the countdown here only saves a round trip.
(function () {
  "use strict";

  var form = document.getElementById("judge-form");
  var status = document.getElementById("judge-status");
  var countdown = document.getElementById("countdown");
  var dialog = document.getElementById("guidelines-dialog");
  var guidelinesLink = document.getElementById("guidelines-link");
  var undoForm = document.getElementById("undo-form");
  var sent = false;

  function announce(text) {
    if (status) status.textContent = text;
  }

  // --- the countdown --------------------------------------------------------------------------------
  var deadline = 0;
  var refuseEarly = false;
  if (form) {
    var left = parseFloat(form.dataset.secondsLeft || "0") || 0;
    deadline = performance.now() + left * 1000;
    refuseEarly = form.dataset.policy === "refuse";
  }

  function secondsLeft() {
    return Math.max(0, Math.ceil((deadline - performance.now()) / 1000));
  }

  function tick() {
    if (!form || !countdown) return;
    var s = secondsLeft();
    if (s > 0) {
      countdown.textContent = "Read the document: you can answer in " + s + " s.";
      form.classList.add("waiting");
      window.setTimeout(tick, 250);
    } else {
      countdown.textContent = "Ready: rate with 0–" + lastGrade() + ", or the buttons.";
      if (form.classList.contains("waiting")) announce("You can answer now.");
      form.classList.remove("waiting");
    }
  }

  function lastGrade() {
    var grades = form.querySelectorAll("button.grade");
    return grades.length ? grades[grades.length - 1].value : "4";
  }

  // --- submitting -----------------------------------------------------------------------------------
  function submitWith(button) {
    if (sent) return;
    if (typeof form.requestSubmit === "function") {
      form.requestSubmit(button);
    } else {
      button.click();
    }
  }

  if (form) {
    form.addEventListener("submit", function (event) {
      var button = event.submitter;
      if (sent) {
        event.preventDefault();
        return;
      }
      if (button && button.name === "grade" && refuseEarly && secondsLeft() > 0) {
        event.preventDefault();
        announce("Too fast: please read the document for " + secondsLeft() + " more seconds before rating.");
        return;
      }
      sent = true;
      if (button) button.classList.add("pressed");
      form.classList.add("sending");
      announce("Saving…");
    });
    tick();
  }

  // --- the guidelines dialog ------------------------------------------------------------------------
  function openGuidelines() {
    if (dialog && typeof dialog.showModal === "function") {
      if (!dialog.open) dialog.showModal();
      return true;
    }
    return false;
  }

  if (guidelinesLink) {
    guidelinesLink.addEventListener("click", function (event) {
      if (openGuidelines()) event.preventDefault();
    });
  }

  // --- keys -----------------------------------------------------------------------------------------
  function typingInField(target) {
    var tag = target && target.tagName;
    return tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT" || (target && target.isContentEditable);
  }

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey || event.repeat || typingInField(event.target)) return;
    if (dialog && dialog.open) return; // Esc closes it natively
    var key = event.key;
    if (key === "?") {
      if (openGuidelines()) event.preventDefault();
      else if (guidelinesLink) window.location.href = guidelinesLink.href;
      return;
    }
    if (key === "z" && undoForm) {
      event.preventDefault();
      undoForm.requestSubmit ? undoForm.requestSubmit() : undoForm.submit();
      return;
    }
    if (!form) return;
    var button = form.querySelector('button[data-key="' + (key.length === 1 ? key.toLowerCase() : "") + '"]');
    if (button) {
      event.preventDefault();
      submitWith(button);
    }
  });
})();
