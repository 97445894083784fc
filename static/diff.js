/* irlens: the diff page. Change navigation (n/p, ]/[ and the arrow buttons), the change
 * counter, and u to switch split/unified. The selected change is kept in the URL's hash
 * (#c3), so a copied link opens on the same change. Everything else is plain links and htmx.
 */
(function () {
  "use strict";

  let current = 0; // 1-based number of the selected change; 0: none yet
  let pending = 0; // a change whose rows are still loading
  let knownTotal = -1;

  const page = () => document.getElementById("diff-page");
  const total = () => {
    const root = page();
    return root ? parseInt(root.dataset.changes || "0", 10) : 0;
  };
  const rowsOf = (n) => document.querySelectorAll('#diff-page tr[data-c="' + n + '"]');

  function updateCounter() {
    const counter = document.querySelector("#diff-page .change-count");
    if (!counter) return;
    const count = total();
    counter.textContent = "";
    if (current > 0) {
      counter.append("change ");
      const strong = document.createElement("b");
      strong.className = "cur-change";
      strong.textContent = String(current);
      counter.append(strong, " of " + count);
    } else {
      counter.textContent = count + (count === 1 ? " change" : " changes");
    }
  }

  function paint() {
    document.querySelectorAll("#diff-page tr.cur").forEach((row) => row.classList.remove("cur"));
    if (current > 0) rowsOf(current).forEach((row) => row.classList.add("cur"));
  }

  function loadChunkHolding(n) {
    const lazies = document.querySelectorAll("#diff-page tbody.lazy[data-first-change]");
    for (const lazy of lazies) {
      const first = parseInt(lazy.dataset.firstChange, 10);
      const last = parseInt(lazy.dataset.lastChange, 10);
      if (first <= n && n <= last && window.htmx) {
        pending = n;
        window.htmx.trigger(lazy, "load-now");
        return true;
      }
    }
    return false;
  }

  function select(n, scroll) {
    const count = total();
    if (!count) return;
    n = Math.max(1, Math.min(count, n));
    const rows = rowsOf(n);
    if (!rows.length) {
      loadChunkHolding(n);
      return;
    }
    current = n;
    pending = 0;
    paint();
    updateCounter();
    if (scroll) rows[0].scrollIntoView({ block: "center" });
    const url = location.pathname + location.search + "#c" + n;
    history.replaceState(history.state, "", url);
  }

  function firstBelowViewport() {
    // with nothing selected, "next" starts from what is on screen
    const top = window.innerHeight * 0.25;
    const firsts = document.querySelectorAll("#diff-page tr[id^='c'][data-c]");
    for (const row of firsts) {
      if (row.getBoundingClientRect().top >= top) return parseInt(row.dataset.c, 10);
    }
    return total();
  }

  function step(direction) {
    if (!total()) return;
    if (pending) {
      // still loading the rows of the change asked for: queue the step after it
      select(pending + direction, true);
      return;
    }
    if (current === 0) {
      select(direction > 0 ? (window.scrollY > 80 ? firstBelowViewport() : 1) : total(), true);
    } else {
      select(current + direction, true);
    }
  }

  function toggleView() {
    const link = document.querySelector("#diff-page [data-view-toggle]");
    if (link) link.click();
  }

  function typing(target) {
    return target instanceof HTMLElement &&
      (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName));
  }

  document.addEventListener("keydown", (event) => {
    if (!page() || event.ctrlKey || event.metaKey || event.altKey || typing(event.target)) return;
    switch (event.key) {
      case "n":
      case "]":
        step(1);
        break;
      case "p":
      case "[":
        step(-1);
        break;
      case "j": // next / previous pass, as on the snapshot page
      case "k": {
        const link = document.querySelector(`#diff-page a[rel="${event.key === "j" ? "next" : "prev"}"]`);
        if (!link) return;
        window.location.href = link.href;
        break;
      }
      case "d": { // back to the snapshot: the diff's B side
        const table = document.querySelector("#diff-page [data-b-url]");
        if (!table) return;
        window.location.href = table.dataset.bUrl;
        break;
      }
      case "u":
        toggleView();
        break;
      default:
        return;
    }
    event.preventDefault();
  });

  document.addEventListener("click", (event) => {
    const button = event.target instanceof Element && event.target.closest("#diff-page [data-step]");
    if (!button) return;
    event.preventDefault();
    step(parseInt(button.dataset.step, 10));
  });

  function init() {
    root = page();
    const count = total();
    if (knownTotal !== -1 && count !== knownTotal) current = 0; // other options: other changes
    knownTotal = count;
    const match = /^#c(\d+)$/.exec(location.hash);
    if (current === 0 && match) current = parseInt(match[1], 10);
    if (current > count) current = 0;
    if (current > 0) {
      const wanted = current;
      current = 0;
      select(wanted, true);
    } else {
      updateCounter();
    }
  }

  let root = null; // the #diff-page element init() last saw; htmx option toggles replace it
  document.addEventListener("htmx:afterSettle", () => {
    if (page() !== root) {
      init();
    } else if (pending) {
      select(pending, true);
    } else {
      paint();
    }
  });

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})();
