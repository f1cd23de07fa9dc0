// Keyboard shortcuts, the minimum-time countdown, the guidelines dialog, the reading view (term
// navigation, passages or full text) and the comment box of the judging page, and its one-request
// answer: the answer is sent with fetch to the form's `data-answer-next` URL, whose reply stores it,
// claims the next task in the same transaction, and holds the page's task part (`.judge`, rendered by
// the server from the template a reload renders), which is swapped in here.
// The page works without this file: every action is a plain form POST (then a redirect to the page),
// the view switch is a link and the comment box a <details>. The server enforces the minimum time;
// the countdown here only saves a round trip.
(function () {
  "use strict";

  var dialog = document.getElementById("guidelines-dialog");
  // The elements of the task part, found again each time a new one is swapped in (`bind`): the header's
  // guidelines link is in it too.
  var form, status, countdown, undoForm, reader, viewSwitch, termNav, termPosition, commentBox, comment;
  var guidelinesLink;
  var sent = false;
  var deadline = 0;
  var refuseEarly = false;
  var ticking = 0;

  function announce(text) {
    if (status) status.textContent = text;
  }

  // --- the countdown --------------------------------------------------------------------------------
  function startCountdown(seconds) {
    deadline = performance.now() + seconds * 1000;
    window.clearTimeout(ticking);
    tick();
  }

  function secondsLeft() {
    return Math.max(0, Math.ceil((deadline - performance.now()) / 1000));
  }

  function tick() {
    if (!form || !countdown) return;
    var s = secondsLeft();
    if (s > 0) {
      countdown.textContent = refuseEarly
        ? "Read the document: you can answer in " + s + " s."
        : "Read the document: an answer in the next " + s + " s is flagged as too fast.";
      form.classList.add("waiting");
      ticking = window.setTimeout(tick, 250);
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

  function onSubmit(event) {
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
    if (form.dataset.answerNext && window.fetch && window.URLSearchParams && window.FormData) {
      event.preventDefault();
      send(form, button);
    }
  }

  // The answer as the form would post it (its fields, the pressed button's name and value), sent with the
  // page's CSRF token in a header and its session cookie. A reply that is not the JSON of the
  // one-request answer (a sign-in page after the session ended, a 403 or 404, no network) falls back
  // to the form's own POST, which shows what the server says.
  function send(sending, button) {
    var body = new URLSearchParams(new FormData(sending));
    if (button && button.name) body.append(button.name, button.value);
    var token = sending.querySelector('input[name="csrfmiddlewaretoken"]');
    window.fetch(sending.dataset.answerNext, {
      method: "POST",
      body: body,
      credentials: "same-origin",
      headers: { "X-CSRFToken": token ? token.value : "", Accept: "application/json" },
    }).then(function (response) {
      var type = response.headers.get("Content-Type") || "";
      if (type.indexOf("application/json") !== 0) return null;
      return response.json();
    }).then(function (reply) {
      return reply;
    }, function () {
      return null;
    }).then(function (reply) {
      if (reply && (reply.html || reply.message)) receive(reply);
      else postPlainly(sending, button);
    });
  }

  function postPlainly(sending, button) {
    if (button && button.name) {
      var field = document.createElement("input");
      field.type = "hidden";
      field.name = button.name;
      field.value = button.value;
      sending.appendChild(field);
    }
    sending.submit(); // no submit event: the plain POST, as without this file
  }

  function receive(reply) {
    if (reply.html) {
      var shown = document.querySelector(".judge");
      var holder = document.createElement("div");
      holder.innerHTML = reply.html;
      var next = holder.querySelector(".judge");
      shown.parentNode.replaceChild(next, shown);
      // As a reload of the page would be: at its top, nothing focused, and its address the page's, so
      // that reloading shows the task now held.
      if (document.activeElement && document.activeElement.blur) document.activeElement.blur();
      window.scrollTo(0, 0);
      if (reply.url && window.history && window.history.replaceState) window.history.replaceState(null, "", reply.url);
      bind();
    } else {
      // Refused as too fast: the task and what was typed stay, and the countdown starts again.
      sent = false;
      form.classList.remove("sending");
      var pressed = form.querySelector(".pressed");
      if (pressed) pressed.classList.remove("pressed");
      announce("");
      if (typeof reply.seconds_left === "number") startCountdown(reply.seconds_left);
    }
    showMessage(reply.message, reply.level);
  }

  // The message the page shows after the form's redirect, in the same place and markup.
  function showMessage(text, level) {
    var main = document.getElementById("main");
    var list = main ? main.querySelector("ul.messages") : null;
    if (!text) {
      if (list) list.parentNode.removeChild(list);
      return;
    }
    if (!list) {
      list = document.createElement("ul");
      list.className = "messages";
      list.setAttribute("role", "status");
      main.insertBefore(list, main.firstChild);
    }
    var item = document.createElement("li");
    item.className = "message " + (level || "info");
    item.textContent = text;
    list.textContent = "";
    list.appendChild(item);
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

  function onGuidelinesClick(event) {
    if (openGuidelines()) event.preventDefault();
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

  // --- the task part: its elements and their handlers, bound again after each swap ------------------
  function bind() {
    form = document.getElementById("judge-form");
    status = document.getElementById("judge-status");
    countdown = document.getElementById("countdown");
    undoForm = document.getElementById("undo-form");
    reader = document.getElementById("document-text");
    viewSwitch = document.getElementById("view-switch");
    termNav = document.getElementById("term-nav");
    termPosition = document.getElementById("term-position");
    commentBox = document.getElementById("comment-box");
    comment = document.getElementById("comment");
    guidelinesLink = document.getElementById("guidelines-link");
    sent = false;
    current = null;
    window.clearTimeout(ticking);

    // One undo per page: a double click (or z pressed twice before the page reloads) would otherwise
    // take back two answers, since undo reaches back over the session.
    if (guidelinesLink) guidelinesLink.addEventListener("click", onGuidelinesClick);
    if (undoForm) {
      undoForm.addEventListener("submit", function (event) {
        if (undoForm.dataset.sent) {
          event.preventDefault();
          return;
        }
        undoForm.dataset.sent = "1";
      });
    }
    if (form) {
      refuseEarly = form.dataset.policy === "refuse";
      form.addEventListener("submit", onSubmit);
      startCountdown(parseFloat(form.dataset.secondsLeft || "0") || 0);
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
    if (comment) {
      comment.addEventListener("keydown", function (event) {
        if (event.key === "Escape" || (event.key === "Enter" && (event.ctrlKey || event.metaKey))) {
          event.preventDefault();
          event.stopPropagation();
          leaveComment();
        }
      });
    }
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
      // Each undo takes back one more answer: a held key's repeats must not take back several. Nor is
      // one sent while an answer is on its way: which answer it took back would depend on which came first.
      if (event.repeat || sent) return;
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

  bind();
})();
