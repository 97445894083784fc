// A click on a layout alias where a tensor or memdesc type uses it (`tensor<64x128xf16, #blocked>`)
// opens the layout inspector for that tensor's shape. Snapshot pages: `a.ly` uses (their encoding,
// aliases expanded, is the data-attr in the `#ly-ALIAS` template); diff pages: alias tokens in the
// code cells, looked up in #layout-aliases for side A or B (a comparison row's preview: in its own
// data-layout-aliases). Elsewhere (a definition line, a parent
// reference) a click keeps its old meaning.
(function () {
  "use strict";
  const holder = document.querySelector("[data-layout-url]");
  if (!holder) return;
  const base = holder.dataset.layoutUrl;
  const TYPE = /(?:tensor|memdesc)<((?:\d+x)+)([^,<>]*(?:<[^<>]*>)?),\s*$/;
  // A diff page has one #layout-aliases; a comparison page's row previews each carry their own
  // (data-layout-aliases on .row-preview), since each row diffs a different pair of passes.
  const parsed = new WeakMap();
  function aliasesFor(cell) {
    const preview = cell.closest(".row-preview");
    const holder = preview || document.getElementById("layout-aliases");
    if (!holder) return null;
    if (!parsed.has(holder)) {
      let value = null;
      try { value = JSON.parse(preview ? preview.dataset.layoutAliases || "null" : holder.textContent); } catch (e) { value = null; }
      parsed.set(holder, value);
    }
    return parsed.get(holder);
  }

  function textBefore(element, container) {
    const range = document.createRange();
    range.setStart(container, 0);
    range.setEndBefore(element);
    return range.toString();
  }

  // The element type goes as the IR writes it (elem=f16, elem=!tt.ptr<f16>): the inspector shows it
  // and derives the width it needs (app/layouts/uses.py).
  function url(attr, match) {
    const shape = match[1].slice(0, -1);
    const elem = match[2].trim();
    return base + "?attr=" + encodeURIComponent(attr) + "&shape=" + shape + (elem ? "&elem=" + encodeURIComponent(elem) : "");
  }

  function target(event) {
    const use = event.target.closest("a.ly:not(.def)");
    if (use) {
      const template = document.getElementById("ly-" + use.dataset.ly);
      const code = use.closest(".code") || use.parentElement;
      const hint = template && template.content.querySelector("[data-attr]");
      const attr = hint && hint.dataset.attr;
      const match = attr && TYPE.exec(textBefore(use, code));
      return match ? url(attr, match) : null;
    }
    const token = event.target.closest("td.c span");
    if (!token || !/^#[\w$-]+$/.test(token.textContent)) return null;
    const cell = token.closest("td.c");
    const diffAliases = aliasesFor(cell);
    if (!diffAliases) return null;
    const sign = cell.querySelector(".sg");
    const side = sign ? (sign.textContent === "-" ? "a" : "b") : (cell.cellIndex <= 1 ? "a" : "b");
    const attr = (diffAliases[side] || {})[token.textContent.slice(1)];
    const match = attr && TYPE.exec(textBefore(token, cell));
    return match ? url(attr, match) : null;
  }

  // Beside each ttg.convert_layout line: what its lowering costs (listed in #cvt-legend).
  const costs = new Map();
  const cvtBanks = new Map();
  document.querySelectorAll("[data-cvt-line]").forEach((li) => {
    costs.set("L" + li.dataset.cvtLine, li.dataset.cvtKind);
    if (li.dataset.cvtBank) cvtBanks.set("L" + li.dataset.cvtLine, li.dataset.cvtBank);
  });
  // Beside each shared-memory access: its bank conflicts (listed in #bank-legend).
  const banks = new Map();
  document.querySelectorAll("[data-bank-line]").forEach((li) => banks.set("L" + li.dataset.bankLine, li));
  // The compiler's remarks at their ops' lines (listed in #remark-legend).
  const remarks = new Map();
  document.querySelectorAll("[data-remark-lines]").forEach((li) => {
    li.dataset.remarkLines.split(",").filter(Boolean).forEach((n) => {
      const id = "L" + n;
      remarks.set(id, (remarks.has(id) ? remarks.get(id) + " · " : "") + li.dataset.remarkNote);
    });
  });
  function markCosts() {
    remarks.forEach((note, id) => {
      const line = document.getElementById(id);
      if (line && !line.dataset.remark) line.dataset.remark = note;
    });
    costs.forEach((kind, id) => {
      const line = document.getElementById(id);
      if (line && !line.dataset.cvt) {
        line.dataset.cvt = kind;
        if (cvtBanks.has(id)) line.dataset.cvtBank = cvtBanks.get(id);
      }
    });
    banks.forEach((li, id) => {
      const line = document.getElementById(id);
      if (!line || line.dataset.bank) return;
      line.dataset.bank = li.dataset.bankNote;
      if (li.dataset.bankN && li.dataset.bankN !== "0") line.dataset.bankBad = "1";
    });
  }
  if (costs.size || banks.size || remarks.size) {
    markCosts();
    const ir = document.querySelector(".ir");
    let queued = false;
    if (ir) new MutationObserver(() => {
      if (queued) return;
      queued = true;
      requestAnimationFrame(() => { queued = false; markCosts(); });
    }).observe(ir, { childList: true, subtree: true });
  }

  document.addEventListener("click", function (event) {
    if (event.button !== 0 || event.defaultPrevented) return;
    const href = target(event);
    if (!href) return;
    event.preventDefault();
    if (event.ctrlKey || event.metaKey) window.open(href, "_blank", "noopener");
    else window.location.href = href;
  }, true);
})();
