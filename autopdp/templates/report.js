/* autopdp report: sort and filter the tables, open a PDP's figure larger. Hand-written, no library,
   nothing loaded from outside. Without it the page still shows every row and every figure. */
(function () {
  "use strict";
  var NUMBER = /^[-+]?(\d[\d,]*\.?\d*|\.\d+)(e[-+]?\d+)?$/i;

  function sortKey(cell) {
    var v = cell.getAttribute("data-v");
    var text = v !== null ? v : cell.textContent.trim();
    if (text === "" || text === "n/a") return null;
    if (v !== null || NUMBER.test(text)) return parseFloat(text.replace(/,/g, ""));
    return text.toLowerCase();
  }

  function compare(a, b) {
    if (a === null || b === null) return a === b ? 0 : (a === null ? 1 : -1);  // blanks last
    if (typeof a === "number" && typeof b === "number") return a - b;
    return String(a).localeCompare(String(b));
  }

  function sortBy(table, index, th) {
    var ascending = th.getAttribute("aria-sort") !== "ascending";
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (c) { c.setAttribute("aria-sort", "none"); });
    th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    var body = table.tBodies[0];
    var rows = Array.prototype.map.call(body.rows, function (row, i) {
      return { row: row, key: sortKey(row.cells[index]), i: i };
    });
    rows.sort(function (x, y) {
      var c = (x.key === null || y.key === null) ? compare(x.key, y.key) : compare(x.key, y.key) * (ascending ? 1 : -1);
      return c || x.i - y.i;
    });
    var frag = document.createDocumentFragment();
    rows.forEach(function (r) { frag.appendChild(r.row); });
    body.appendChild(frag);
  }

  document.querySelectorAll("table.sortable").forEach(function (table) {
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, index) {
      var button = document.createElement("button");
      button.type = "button";
      button.className = "sort";
      while (th.firstChild) button.appendChild(th.firstChild);
      th.appendChild(button);
      th.setAttribute("aria-sort", "none");
      button.addEventListener("click", function () { sortBy(table, index, th); });
    });
  });

  var form = document.getElementById("explore-filters");
  function applyFilters() {
    if (!form) return;
    var q = form.elements.q.value.trim().toLowerCase();
    var criterion = form.elements.criterion.value;
    var finding = form.elements.finding.value;
    var pmax = parseFloat(form.elements.pmax.value);
    var smin = parseFloat(form.elements.smin.value);
    document.querySelectorAll("[data-criterion-block]").forEach(function (block) {
      block.hidden = criterion !== "" && block.getAttribute("data-criterion-block") !== criterion;
      var rows = block.querySelectorAll("tbody tr"), shown = 0;
      rows.forEach(function (tr) {
        var p = tr.getAttribute("data-p"), s = tr.getAttribute("data-score");
        var ok = (!q || tr.getAttribute("data-pdp").toLowerCase().indexOf(q) >= 0) &&
          (!finding || (finding === "yes") === (tr.getAttribute("data-finding") === "yes")) &&
          (isNaN(pmax) || (p !== null && p !== "" && parseFloat(p) <= pmax)) &&
          (isNaN(smin) || s === null || (s !== "" && parseFloat(s) >= smin));
        tr.hidden = !ok;
        if (ok) shown += 1;
      });
      var count = block.querySelector(".count");
      if (count) count.textContent = shown + " of " + rows.length + " rows";
    });
  }
  if (form) {
    form.addEventListener("submit", function (event) { event.preventDefault(); });
    form.addEventListener("input", applyFilters);
    form.addEventListener("change", applyFilters);
    form.addEventListener("reset", function () { setTimeout(applyFilters, 0); });
  }

  var dialog = document.getElementById("pdp-dialog");
  function openFigure(key) {
    var figures = document.querySelectorAll("[data-pdp-figure]");
    for (var i = 0; i < figures.length; i++) {
      if (figures[i].getAttribute("data-pdp-figure") === key) {
        var copy = figures[i].cloneNode(true);
        ["data-pdp-figure", "data-open-pdp", "tabindex"].forEach(function (a) { copy.removeAttribute(a); });
        var body = dialog.querySelector(".dialog-body");
        body.replaceChildren(copy);
        dialog.setAttribute("data-showing", key);
        if (!dialog.open) dialog.showModal();
        return true;
      }
    }
    return false;
  }
  document.addEventListener("click", function (event) {
    var link = event.target.closest("[data-criterion-link]");
    if (link && form) {  // a criterion's "full ranking" link shows that ranking
      form.elements.criterion.value = link.getAttribute("data-criterion-link");
      applyFilters();
      return;
    }
    var opener = event.target.closest("[data-open-pdp]");
    if (opener && !dialog.contains(opener) && openFigure(opener.getAttribute("data-open-pdp"))) event.preventDefault();
  });
  document.addEventListener("keydown", function (event) {
    var opener = event.target.closest && event.target.closest("figure[data-open-pdp]");
    if (opener && (event.key === "Enter" || event.key === " ")) {
      event.preventDefault();
      openFigure(opener.getAttribute("data-open-pdp"));
    }
  });
  dialog.addEventListener("click", function (event) { if (event.target === dialog) dialog.close(); });
})();
