// The layout inspector: select a cell (click or arrow keys) to read its owners and outline every
// cell the same thread holds; [ ] { } move between windows; #cell=r,c makes the selection shareable.
(function () {
  "use strict";
  const grid = document.getElementById("layout-grid");
  if (!grid) return;
  const info = document.getElementById("layout-info");
  const cells = new Map();
  grid.querySelectorAll("g.cell").forEach((g) => cells.set(g.dataset.r + "," + g.dataset.c, g));
  const row0 = Number(grid.dataset.row0), col0 = Number(grid.dataset.col0);
  let current = null;

  function select(g, updateHash) {
    if (!g) return;
    grid.querySelectorAll("g.cell.selected, g.cell.same").forEach((x) => x.classList.remove("selected", "same"));
    const first = g.dataset.t.split(" ")[0];
    grid.querySelectorAll("g.cell").forEach((x) => {
      if (x.dataset.t.split(" ").includes(first)) x.classList.add("same");
    });
    g.classList.add("selected");
    current = g;
    info.textContent = g.dataset.info.split("; ").join("\n");
    if (updateHash) {
      history.replaceState(null, "", "#cell=" + (row0 + Number(g.dataset.r)) + "," + (col0 + Number(g.dataset.c)));
    }
  }

  grid.addEventListener("click", (e) => {
    const g = e.target.closest("g.cell");
    if (g) { select(g, true); grid.focus(); }
  });
  const moves = { ArrowLeft: [0, -1], ArrowRight: [0, 1], ArrowUp: [-1, 0], ArrowDown: [1, 0] };
  const pages = { "[": "left", "]": "right", "{": "up", "}": "down" };
  grid.addEventListener("keydown", (e) => {
    if (moves[e.key]) {
      e.preventDefault();
      const r = current ? Number(current.dataset.r) : 0, c = current ? Number(current.dataset.c) : 0;
      const next = current ? cells.get((r + moves[e.key][0]) + "," + (c + moves[e.key][1])) : cells.get("0,0");
      select(next, true);
    } else if (pages[e.key]) {
      const link = document.querySelector('.layout-pages a[data-key="' + pages[e.key] + '"]');
      if (link) location.href = link.href;
    }
  });
  const m = /#cell=(\d+),(\d+)/.exec(location.hash);
  if (m) select(cells.get((Number(m[1]) - row0) + "," + (Number(m[2]) - col0)), false);
})();
