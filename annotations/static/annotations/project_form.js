// The project form's helpers (a static file: the site's CSP forbids inline scripts).
//
// 1. Row editors: a <textarea data-row-columns="[...]"> holding a JSON list of objects (the grade scale,
//    the guideline examples) is shown as a table with one row per object, a "remove" button per row and
//    an "add" button. Every edit writes the rows back into the (hidden) textarea as JSON, which is what
//    the form submits and the server validates; without JavaScript the textarea stays as it is. Keys the
//    table has no column for are kept.
// 2. The slug: <input data-slug-from="id_name"> follows the name as you type while it is empty or still
//    what the name gave it; once edited by hand it is left alone.
(function () {
  "use strict";

  function element(tag, attributes, text) {
    var node = document.createElement(tag);
    Object.keys(attributes || {}).forEach(function (name) { node.setAttribute(name, attributes[name]); });
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function rowEditor(textarea) {
    var columns = JSON.parse(textarea.dataset.rowColumns);
    var rows;
    try {
      rows = JSON.parse(textarea.value || "[]");
    } catch (error) {
      return; // not JSON (a typo in an earlier submit): leave the textarea for the user to fix
    }
    if (!Array.isArray(rows) || !rows.every(function (row) { return row && typeof row === "object"; })) return;

    var name = textarea.name;
    var wrap = element("div", { class: "row-editor", "data-rows-for": name });
    var table = element("table", { class: "data row-table", id: "rows-" + name });
    var head = element("tr");
    columns.forEach(function (column) { head.appendChild(element("th", { scope: "col" }, column.label)); });
    head.appendChild(element("th", { scope: "col" }, ""));
    table.appendChild(element("thead")).appendChild(head);
    var body = table.appendChild(element("tbody"));
    var add = element("button", { type: "button", class: "secondary add-row" }, textarea.dataset.addLabel || "Add a row");
    wrap.appendChild(table);
    wrap.appendChild(add);

    function value(input, column) {
      var text = input.value;
      if (column.type === "number" && /^\s*-?\d+\s*$/.test(text)) return parseInt(text, 10);
      return text;
    }

    function write() {
      var data = Array.prototype.map.call(body.rows, function (tr) {
        var row = Object.assign({}, tr.extra);
        columns.forEach(function (column, index) {
          var input = tr.cells[index].firstChild;
          var v = value(input, column);
          if (column.optional && v === "") delete row[column.key];
          else row[column.key] = v;
        });
        return row;
      });
      textarea.value = JSON.stringify(data, null, 2);
    }

    function addRow(row, focus) {
      var tr = element("tr");
      tr.extra = Object.assign({}, row);
      columns.forEach(function (column) {
        var cell = element("td");
        var label = column.label + " (row " + (body.rows.length + 1) + ")";
        var input = column.type === "textarea"
          ? element("textarea", { rows: "2", "aria-label": label, "data-key": column.key })
          : element("input", { type: column.type === "number" ? "number" : "text", "aria-label": label, "data-key": column.key });
        if (column.type === "number") {
          if (column.min !== undefined) input.setAttribute("min", column.min);
          if (column.max !== undefined) input.setAttribute("max", column.max);
          input.setAttribute("step", "1");
        }
        var current = row[column.key];
        input.value = current === undefined || current === null ? "" : String(current);
        input.addEventListener("input", write);
        cell.appendChild(input);
        tr.appendChild(cell);
      });
      var remove = element("button", { type: "button", class: "secondary remove-row" }, textarea.dataset.removeLabel || "Remove");
      remove.addEventListener("click", function () { tr.remove(); write(); });
      tr.appendChild(element("td")).appendChild(remove);
      body.appendChild(tr);
      if (focus) tr.querySelector("input, textarea").focus();
    }

    rows.forEach(function (row) { addRow(row, false); });
    add.addEventListener("click", function () {
      var next = {};
      var grades = Array.prototype.map.call(body.rows, function (tr) {
        return parseInt(tr.querySelector('[data-key="grade"]') ? tr.querySelector('[data-key="grade"]').value : "", 10);
      }).filter(function (g) { return !isNaN(g); });
      if (name === "scale") next.grade = grades.length ? Math.max.apply(null, grades) + 1 : 0;
      addRow(next, true);
      write();
    });
    textarea.hidden = true;
    textarea.classList.add("rows-source");
    textarea.parentNode.insertBefore(wrap, textarea.nextSibling);
  }

  function slugify(text) {
    return text.normalize("NFKD").replace(/[\u0300-\u036f]/g, "").toLowerCase()
      .replace(/[^a-z0-9]+/g, "-").replace(/^-+|-+$/g, "").slice(0, 64);
  }

  function slugFollower(slug) {
    var source = document.getElementById(slug.dataset.slugFrom);
    if (!source) return;
    var following = slug.value === "" || slug.value === slugify(source.value);
    source.addEventListener("input", function () {
      if (following) slug.value = slugify(source.value);
    });
    slug.addEventListener("input", function () { following = slug.value === ""; });
  }

  function start() {
    document.querySelectorAll("textarea[data-row-columns]").forEach(rowEditor);
    document.querySelectorAll("input[data-slug-from]").forEach(slugFollower);
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
