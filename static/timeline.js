// The compilation page's pass list: a filter by pass name, argument, stage or #index ("/" focuses it;
// Enter opens the first pass it shows, or the pass whose index was typed), and the keys overlay ("?").
// j/k/Enter/d on the rows themselves are in snapshot.js.
(function () {
  "use strict";
  const input = document.getElementById("pass-filter");
  const timeline = document.getElementById("timeline");
  const help = document.getElementById("pass-help");
  if (!timeline) return;
  const rows = Array.from(timeline.querySelectorAll("tr.pass")).map((row) => {
    const group = row.closest("tbody");
    const stage = group.querySelector(".stage-row");
    const text = [row.querySelector(".pass-name"), row.querySelector(".pass-arg"), stage && stage.querySelector(".chip"),
      stage && stage.querySelector(".stage-title")].map((el) => (el ? el.textContent : "")).join(" ");
    return { row, group, index: row.querySelector(".idx").textContent.trim(), text: (text + " " + group.dataset.stage).toLowerCase() };
  });
  const count = document.getElementById("pass-filter-count");

  function apply() {
    const words = input.value.trim().toLowerCase().split(/\s+/).filter(Boolean);
    const shown = new Set();
    rows.forEach((item) => {
      const hit = words.every((word) => (/^#?\d+$/.test(word) ? item.index === word.replace("#", "") : item.text.includes(word)));
      item.row.classList.toggle("filtered-out", !hit);
      if (hit) shown.add(item.group);
    });
    timeline.querySelectorAll("tbody.stage-group").forEach((group) => group.classList.toggle("filtered-out", !shown.has(group)));
    if (count) count.textContent = words.length ? rows.filter((item) => !item.row.classList.contains("filtered-out")).length + " shown" : "";
  }

  if (input) {
    input.addEventListener("input", apply);
    input.addEventListener("keydown", (event) => {
      if (event.key === "Enter") {
        event.preventDefault();
        const first = rows.find((item) => !item.row.classList.contains("filtered-out") && item.row.offsetParent !== null);
        if (first) window.location.href = first.row.dataset.url;
      } else if (event.key === "Escape") {
        input.value = "";
        apply();
        input.blur();
      }
    });
    if (input.value) apply();  // kept by the browser on back
  }

  function typing(event) {
    const target = event.target;
    return event.ctrlKey || event.metaKey || event.altKey || Boolean(target.closest && target.closest("input, textarea, select, [contenteditable]"));
  }
  function toggleHelp(show) { if (help) help.hidden = show === undefined ? !help.hidden : !show; }
  document.querySelectorAll('[data-action="pass-help"]').forEach((button) => button.addEventListener("click", () => toggleHelp()));
  if (help) help.addEventListener("click", (event) => { if (event.target === help) toggleHelp(false); });
  document.addEventListener("keydown", (event) => {
    if (typing(event)) return;
    if (event.key === "?") { toggleHelp(); event.preventDefault(); }
    else if (event.key === "Escape" && help && !help.hidden) toggleHelp(false);
    else if (event.key === "/" && input) { input.focus(); input.select(); event.preventDefault(); }
  });
})();
