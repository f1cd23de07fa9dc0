// Keyboard shortcuts, the minimum-time countdown, the guidelines dialog, the reading view (term
// navigation, passages or full text) and the comment box of the judging page.
// The page works without this file: every action is a plain form POST, the view switch is a link
// and the comment box a <details>. The server enforces the minimum time; the countdown here only
// saves a round trip.
(function () {
  "use strict";

  var form = document.getElementById("judge-form");
  var status = document.getElementById("judge-status");
  var countdown = document.getElementById("countdown");
  var dialog = document.getElementById("guidelines-dialog");
  var guidelinesLink = document.getElementById("guidelines-link");
  var undoForm = document.getElementById("undo-form");
  var reader = document.getElementById("document-text");
  var viewSwitch = document.getElementById("view-switch");
  var termNav = document.getElementById("term-nav");
  var termPosition = document.getElementById("term-position");
  var commentBox = document.getElementById("comment-box");
  var comment = document.getElementById("comment");
  var sent = false;

  // One undo per page: a double click (or z pressed twice before the page reloads) would otherwise
  // take back two answers, since undo now reaches back over the session.
  if (undoForm) {
    undoForm.addEventListener("submit", function (event) {
      if (undoForm.dataset.sent) {
        event.preventDefault();
        return;
      }
      undoForm.dataset.sent = "1";
    });
  }

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
      dialog.scrollTop = 0; // it opens at its top, whatever it showed last time
      return true;
    }
    return false;
  }

  if (guidelinesLink) {
    guidelinesLink.addEventListener("click", function (event) {
      if (openGuidelines()) event.preventDefault();
    });
  }

  // --- the reading view: passages or full text, and the query's terms ------------------------------
  // Switching views keeps the place by the document line (each block carries data-line), so "v" on a
  // passage opens the full text at that passage, on the first term there.
  var current = null;

  function activeView() {
    return reader ? reader.querySelector(".reading-view:not([hidden])") : null;
  }

  function marks() {
    var view = activeView();
    return view ? Array.prototype.slice.call(view.querySelectorAll("mark")) : [];
  }

  function scrollReaderTo(element) {
    // Only the document's own scroll region moves: the page, and so the rating buttons, stay put.
    var top = element.getBoundingClientRect().top - reader.getBoundingClientRect().top;
    reader.scrollTop += top - reader.clientHeight / 3;
  }

  function showTerm(index) {
    var all = marks();
    if (!all.length) return;
    index = (index + all.length) % all.length;
    if (current) current.classList.remove("current");
    current = all[index];
    current.classList.add("current");
    scrollReaderTo(current);
    if (termPosition) termPosition.textContent = "term " + (index + 1) + " of " + all.length;
  }

  function moveTerm(step) {
    var all = marks();
    var index = current ? all.indexOf(current) : -1;
    if (index === -1) {
      // No current term yet: start from what is in sight, so a reader who scrolled keeps the place.
      var top = reader.getBoundingClientRect().top;
      var below = all.findIndex(function (mark) { return mark.getBoundingClientRect().top >= top; });
      if (below === -1) below = all.length;
      index = step > 0 ? below - 1 : below;
    }
    showTerm(index + step);
  }

  function lineOf(element) {
    var block = element && element.closest("[data-line]");
    return block ? parseInt(block.dataset.line, 10) : 0;
  }

  function firstVisibleBlock() {
    var view = activeView();
    var top = reader.getBoundingClientRect().top;
    var blocks = view ? view.querySelectorAll("[data-line]") : [];
    for (var i = 0; i < blocks.length; i++) {
      if (blocks[i].getBoundingClientRect().bottom > top) return blocks[i];
    }
    return null;
  }

  function showCount() {
    if (termPosition) termPosition.textContent = marks().length + " terms";
  }

  function toggleView() {
    var views = reader ? reader.querySelectorAll(".reading-view") : [];
    if (views.length < 2 || !viewSwitch) return;
    var from = activeView();
    var next = from === views[0] ? views[1] : views[0];
    var line = lineOf(current) || lineOf(firstVisibleBlock());
    if (current) current.classList.remove("current");
    current = null;
    from.hidden = true;
    next.hidden = false;
    var passages = next.dataset.view === "passages";
    viewSwitch.firstChild.textContent = (passages ? viewSwitch.dataset.fullLabel : viewSwitch.dataset.passagesLabel) + " ";
    viewSwitch.setAttribute("href", "?view=" + (passages ? "full" : "passages"));
    // Land on the block that holds the same line: the last one starting at or before it.
    var target = null;
    next.querySelectorAll("[data-line]").forEach(function (block) {
      if (parseInt(block.dataset.line, 10) <= line) target = block;
    });
    reader.scrollTop = 0;
    var mark = target && target.querySelector("mark");
    if (mark) {
      showTerm(marks().indexOf(mark));
    } else {
      if (target) scrollReaderTo(target);
      showCount();
    }
    announce(passages ? "Showing the passages around the query's terms." : "Showing the full text.");
  }

  if (reader) {
    if (termNav && reader.querySelector("mark")) {
      termNav.hidden = false;
      showCount();
      document.getElementById("term-next").addEventListener("click", function () { moveTerm(1); });
      document.getElementById("term-previous").addEventListener("click", function () { moveTerm(-1); });
    }
    if (viewSwitch) {
      viewSwitch.addEventListener("click", function (event) {
        event.preventDefault();
        toggleView();
      });
    }
  }

  // --- the comment box ------------------------------------------------------------------------------
  function openComment() {
    if (!commentBox || !comment) return;
    commentBox.open = true;
    comment.focus();
  }

  function leaveComment() {
    // A comment is sent with the answer even from a closed <details>, so one with text stays open
    // and in sight: nothing is sent that the annotator cannot see.
    if (!comment.value.trim()) {
      comment.value = "";
      commentBox.open = false;
    }
    comment.blur();
    if (reader) reader.focus({ preventScroll: true });
    announce(comment.value ? "Comment kept: it is saved with your answer. Rate with the keys." : "");
  }

  if (comment) {
    comment.addEventListener("keydown", function (event) {
      if (event.key === "Escape" || (event.key === "Enter" && (event.ctrlKey || event.metaKey))) {
        event.preventDefault();
        event.stopPropagation();
        leaveComment();
      }
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
    if (key === "n" || key === "p") {
      if (termNav && !termNav.hidden) {
        event.preventDefault();
        moveTerm(key === "n" ? 1 : -1);
      }
      return;
    }
    if (key === "v" && viewSwitch) {
      event.preventDefault();
      toggleView();
      return;
    }
    if (key === "c" && commentBox) {
      event.preventDefault();
      openComment();
      return;
    }
    if (key === "?") {
      if (openGuidelines()) event.preventDefault();
      else if (guidelinesLink) window.location.href = guidelinesLink.href;
      return;
    }
    if (key === "z" && undoForm) {
      event.preventDefault();
      // Each undo takes back one more answer: a held key's repeats must not take back several.
      if (event.repeat) return;
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
