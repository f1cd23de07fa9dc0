// Digit keys set the final grade on the adjudication page (the buttons do the same without this file).
// Typing in the note is left alone; Escape leaves the note so the digits work again.
(function () {
  "use strict";

  var form = document.getElementById("adjudicate-form");
  var status = document.getElementById("adjudicate-status");
  if (!form) return;
  var sent = false;

  function typingInField(target) {
    var tag = target && target.tagName;
    return tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT" || (target && target.isContentEditable);
  }

  form.addEventListener("submit", function (event) {
    if (sent) {
      event.preventDefault();
      return;
    }
    sent = true;
    if (event.submitter) event.submitter.classList.add("pressed");
    if (status) status.textContent = "Saving…";
  });

  document.addEventListener("keydown", function (event) {
    if (event.key === "Escape" && typingInField(event.target)) {
      event.target.blur();
      return;
    }
    if (event.ctrlKey || event.metaKey || event.altKey || event.repeat || typingInField(event.target)) return;
    var button = form.querySelector('button[data-key="' + (event.key.length === 1 ? event.key : "") + '"]');
    if (!button || sent) return;
    event.preventDefault();
    if (typeof form.requestSubmit === "function") form.requestSubmit(button);
    else button.click();
  });
})();
