/* irlens: the compare page. j/k (or n/p) step through the rows where the two compilations
 * differ, opening folded runs when needed; o previews the selected row's diff in place, d or
 * Enter opens it. The selected row is kept in the URL's hash (#r12), so a copied link opens on
 * it. Without JavaScript the fold links reload the page unfolded and "diff" links still work.
 */
(function () {
  "use strict";

  const page = () => document.getElementById("compare-page");
  const diverging = () => [...document.querySelectorAll("#compare-page tr.pair.diverging")];
  let current = -1; // index into diverging(); -1: none yet

  function unfold(row) {
    const body = row.closest("tbody.folded");
    if (!body || !body.hidden) return;
    body.hidden = false;
    const fold = document.getElementById("fold" + body.dataset.folded);
    if (fold) fold.remove();
  }

  function updateCounter(rows) {
    const counter = document.querySelector("#compare-page .div-count");
    if (!counter) return;
    counter.textContent = current >= 0 ? "differing " + (current + 1) + " of " + rows.length : rows.length + " differing";
  }

  function select(position, scroll) {
    const rows = diverging();
    if (!rows.length) return;
    current = Math.max(0, Math.min(rows.length - 1, position));
    document.querySelectorAll("#compare-page tr.pair.cur").forEach((row) => row.classList.remove("cur"));
    const row = rows[current];
    unfold(row);
    row.classList.add("cur");
    history.replaceState(null, "", "#" + row.id);
    if (scroll) row.scrollIntoView({ block: "center" });
    updateCounter(rows);
  }

  function selectRow(row, scroll) {
    unfold(row);
    const rows = diverging();
    const position = rows.indexOf(row);
    if (position >= 0) {
      select(position, scroll);
    } else {
      history.replaceState(null, "", "#" + row.id);
      if (scroll) row.scrollIntoView({ block: "center" });
    }
  }

  function step(delta) {
    const rows = diverging();
    if (!rows.length) return;
    select(current < 0 ? (delta > 0 ? 0 : rows.length - 1) : current + delta, true);
  }

  function togglePreview(button) {
    const row = button.closest("tr");
    const next = row.nextElementSibling;
    if (next && next.classList.contains("preview-row")) {
      next.remove();
      button.setAttribute("aria-expanded", "false");
      return;
    }
    const holder = document.createElement("tr");
    holder.className = "preview-row";
    const cell = document.createElement("td");
    cell.colSpan = row.children.length;
    const body = document.createElement("div");
    body.className = "preview-body muted small";
    body.textContent = "Loading the diff…";
    cell.append(body);
    holder.append(cell);
    row.after(holder);
    button.setAttribute("aria-expanded", "true");
    if (window.htmx) {
      window.htmx.ajax("GET", button.dataset.preview, { target: body, swap: "outerHTML" });
    }
  }

  function currentRow() {
    const rows = diverging();
    return current >= 0 ? rows[current] : null;
  }

  document.addEventListener("click", (event) => {
    const fold = event.target.closest("#compare-page a.fold-open");
    if (fold) {
      event.preventDefault();
      const body = document.querySelector('#compare-page tbody[data-folded="' + fold.dataset.fold + '"]');
      if (body) unfold(body.querySelector("tr.pair"));
      return;
    }
    const goto = event.target.closest("#compare-page [data-goto]");
    if (goto) {
      const row = document.getElementById("r" + goto.dataset.goto);
      if (row) {
        event.preventDefault();
        selectRow(row, true);
      }
      return;
    }
    const button = event.target.closest("#compare-page .change-nav [data-step]");
    if (button) {
      step(parseInt(button.dataset.step, 10));
      return;
    }
    const preview = event.target.closest("#compare-page .preview-toggle");
    if (preview) togglePreview(preview);
  });

  document.addEventListener("keydown", (event) => {
    if (!page() || event.ctrlKey || event.metaKey || event.altKey) return;
    const target = event.target;
    if (target && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName))) return;
    if (event.key === "j" || event.key === "n") {
      step(1);
    } else if (event.key === "k" || event.key === "p") {
      step(-1);
    } else if (event.key === "o") {
      const row = currentRow();
      const button = row && row.querySelector(".preview-toggle");
      if (button) togglePreview(button);
    } else if (event.key === "d" || event.key === "Enter") {
      const row = currentRow();
      if (row && row.dataset.diff) window.location.href = row.dataset.diff;
      else return;
    } else {
      return;
    }
    event.preventDefault();
  });

  // a row's status says whether it is the same once the chosen ignore options apply
  document.addEventListener("htmx:load", (event) => {
    const element = event.detail && event.detail.elt;
    if (element && element.matches && element.matches(".row-status.equivalent")) {
      const row = element.closest("tr.pair");
      if (row) row.classList.add("equivalent");
    }
  });

  function fromHash() {
    const match = /^#r(\d+)$/.exec(window.location.hash);
    if (!match) return;
    const row = document.getElementById("r" + match[1]);
    if (row) selectRow(row, true);
  }

  document.addEventListener("DOMContentLoaded", fromHash);
  document.addEventListener("htmx:afterSettle", (event) => {
    if (event.target && event.target.id === "compare-page") {
      current = -1;
      fromHash();
    }
  });
})();
