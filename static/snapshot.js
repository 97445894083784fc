/* irlens: the compilation timeline, the snapshot / cached-file viewer and the map page.
 *
 * Everything here enhances server-rendered HTML: links, anchors and ?loc=1 style toggles work
 * without it. Markup (see app/render/__init__.py): #ir > .ln#L{n}[data-py="F:L"] > a.nr, .gtr, .mk, .code;
 * the Python pane: .src-file[data-file=F][data-path] > .src > .pl[data-l=L], lines outside the
 * first window inside .pl-defer[data-start, data-count] > template.
 * A long text arrives in parts: the page holds its first lines and one .part.pending[data-start,
 * data-count, data-url] placeholder per later part, fetched when scrolled near (or when a link,
 * a Python line or an op filter needs its lines); #ir-data holds every line's data-py and op groups.
 */
(function () {
  "use strict";

  const PREFS_KEY = "irlens.snapshot.prefs";
  const HIDE_KEY = "irlens.compilation.hideUnchanged";

  function readJSON(key, fallback) {
    try {
      const value = JSON.parse(window.localStorage.getItem(key));
      return value === null ? fallback : value;
    } catch (error) {
      return fallback;
    }
  }

  function writeJSON(key, value) {
    try { window.localStorage.setItem(key, JSON.stringify(value)); } catch (error) { /* private mode */ }
  }

  function typing(event) {
    const target = event.target;
    if (event.ctrlKey || event.metaKey || event.altKey) return true;
    if (!target || !target.closest) return false;
    return Boolean(target.closest("input, textarea, select, [contenteditable]"));
  }

  /* ---- compilation page: hide unchanged, a row cursor on j/k --------------------------------- */
  function setupCompilation(page) {
    const checkbox = document.getElementById("hide-unchanged");
    if (checkbox) {
      checkbox.checked = Boolean(readJSON(HIDE_KEY, false));
      const apply = function () {
        page.classList.toggle("hide-unchanged", checkbox.checked);
        writeJSON(HIDE_KEY, checkbox.checked);
      };
      checkbox.addEventListener("change", apply);
      apply();
    }
    const changes = document.getElementById("history-changes"); /* op history: only the passes that change it */
    if (changes) {
      const show = function () { page.classList.toggle("only-changes", changes.checked); };
      changes.addEventListener("change", show);
      show();
    }
    let cursor = null;
    function visibleRows() {
      return Array.from(page.querySelectorAll("tr.pass")).filter(function (row) { return row.offsetParent !== null; });
    }
    function move(step) {
      const rows = visibleRows();
      if (!rows.length) return;
      let index = cursor ? rows.indexOf(cursor) : -1;
      index = index < 0 ? (step > 0 ? 0 : rows.length - 1) : Math.min(rows.length - 1, Math.max(0, index + step));
      if (cursor) cursor.classList.remove("cursor");
      cursor = rows[index];
      cursor.classList.add("cursor");
      cursor.scrollIntoView({ block: "nearest" });
    }
    document.addEventListener("keydown", function (event) {
      if (typing(event)) return;
      if (event.key === "j" || event.key === "n") { move(1); event.preventDefault(); }
      else if (event.key === "k" || event.key === "p") { move(-1); event.preventDefault(); }
      else if ((event.key === "Enter" || event.key === "o") && cursor) { window.location.href = cursor.dataset.url; }
      else if (event.key === "d" && cursor) {
        const diff = cursor.querySelector("td.links a[href*='/diff/']");
        if (diff) window.location.href = diff.href;
      }
    });
  }

  /* ---- snapshot page ------------------------------------------------------------------------- */
  function setupSnapshot(page) {
    const ir = document.getElementById("ir");
    const irPane = document.getElementById("ir-pane");
    const tip = document.getElementById("tip");
    const help = document.getElementById("help");
    if (!ir) return;

    /* parts of a long text not loaded yet */
    const dataElement = document.getElementById("ir-data");
    const irData = dataElement ? JSON.parse(dataElement.textContent) : null;
    const loads = new Map(); /* placeholder -> promise */
    const loadedHooks = [];
    function pendingParts() { return Array.from(ir.querySelectorAll(".part.pending")); }
    function loadPart(placeholder) {
      if (loads.has(placeholder)) return loads.get(placeholder);
      const promise = fetch(placeholder.dataset.url, { headers: { "HX-Request": "true" } })
        .then(function (response) {
          if (!response.ok) throw new Error("HTTP " + response.status);
          return response.text();
        })
        .then(function (html) {
          const part = document.createElement("div");
          part.className = "part";
          part.dataset.start = placeholder.dataset.start;
          part.innerHTML = html; /* escaped by the server's renderer */
          if (observer) observer.unobserve(placeholder);
          placeholder.replaceWith(part);
          loadedHooks.forEach(function (hook) { hook(part); });
          return part;
        })
        .catch(function (error) {
          loads.delete(placeholder);
          throw error;
        });
      loads.set(placeholder, promise);
      return promise;
    }
    /* resolves once lines from..to (1-based) are in the page */
    function ensureLines(from, to) {
      const wanted = pendingParts().filter(function (placeholder) {
        const start = parseInt(placeholder.dataset.start, 10);
        const count = parseInt(placeholder.dataset.count, 10);
        return start < to && start + count >= from;
      });
      return Promise.all(wanted.map(loadPart));
    }
    function ensureAll() { return Promise.all(pendingParts().map(loadPart)); }
    const observer = "IntersectionObserver" in window && irData
      ? new IntersectionObserver(function (entries) {
          entries.forEach(function (entry) { if (entry.isIntersecting) loadPart(entry.target).catch(function () {}); });
        }, { root: irPane, rootMargin: "1500px 0px" })
      : null;
    if (observer) pendingParts().forEach(function (placeholder) { observer.observe(placeholder); });

    /* display toggles, remembered unless the URL asked for a state */
    const toggles = Array.from(page.querySelectorAll(".toggle-btn[data-toggle]"));
    const prefs = readJSON(PREFS_KEY, {});
    function setToggle(name, on, remember) {
      page.classList.toggle(name, on);
      toggles.forEach(function (button) {
        if (button.dataset.toggle !== name) return;
        const shown = button.hasAttribute("data-inverted") ? !on : on;
        button.setAttribute("aria-checked", shown ? "true" : "false");
      });
      if (remember) {
        prefs[name] = on;
        writeJSON(PREFS_KEY, prefs);
      }
    }
    if (page.dataset.prefs === "stored") {
      ["show-loc", "no-color", "wrap"].forEach(function (name) {
        if (typeof prefs[name] === "boolean") setToggle(name, prefs[name], false);
      });
    }
    function flip(name) {
      const anchor = firstSelected();
      setToggle(name, !page.classList.contains(name), true);
      if (anchor) anchor.scrollIntoView({ block: "center" });
    }
    toggles.forEach(function (button) {
      button.addEventListener("click", function (event) {
        event.preventDefault();
        flip(button.dataset.toggle);
      });
    });

    /* line selection: #L10, shift-click for #L10-L24 */
    let selected = [];
    let anchorLine = null;
    function line(number) { return document.getElementById("L" + number); }
    function firstSelected() { return selected.length ? selected[0] : null; }
    function clearSelection() {
      selected.forEach(function (element) { element.classList.remove("sel"); });
      selected = [];
    }
    function select(from, to, scroll) {
      clearSelection();
      const low = Math.min(from, to);
      const high = Math.max(from, to);
      for (let number = low; number <= high; number += 1) {
        const element = line(number);
        if (element) {
          element.classList.add("sel");
          selected.push(element);
        }
      }
      if (scroll && selected.length) {
        if (!page.classList.contains("show-loc") && selected[0].classList.contains("locdef")) setToggle("show-loc", true, false);
        selected[0].scrollIntoView({ block: selected.length > 20 ? "start" : "center" });
      }
    }
    let selectedRange = null;
    function fromHash(scroll) {
      const match = /^#L(\d+)(?:-L?(\d+))?$/.exec(window.location.hash);
      if (!match) return Promise.resolve();
      const from = parseInt(match[1], 10);
      const to = match[2] ? parseInt(match[2], 10) : from;
      anchorLine = from;
      selectedRange = [Math.min(from, to), Math.max(from, to)];
      select(from, to, false);
      return ensureLines(Math.min(from, to), Math.max(from, to)).then(function () {
        if (anchorLine === from) select(from, to, scroll);
      }, function () {});
    }
    window.addEventListener("hashchange", function () { fromHash(true); });
    const linked = fromHash(true);
    /* a selected range spanning a part that loads later gets its lines too */
    loadedHooks.push(function (part) {
      if (!selectedRange) return;
      part.querySelectorAll(".ln").forEach(function (element) {
        const number = parseInt(element.id.slice(1), 10);
        if (number >= selectedRange[0] && number <= selectedRange[1] && !element.classList.contains("sel")) {
          element.classList.add("sel");
          selected.push(element);
        }
      });
    });

    ir.addEventListener("click", function (event) {
      const number = event.target.closest("a.nr");
      if (number) {
        event.preventDefault();
        const row = number.parentElement;
        const current = parseInt(row.id.slice(1), 10);
        if (event.shiftKey && anchorLine !== null) {
          select(anchorLine, current, false);
          const low = Math.min(anchorLine, current);
          const high = Math.max(anchorLine, current);
          selectedRange = [low, high];
          history.replaceState(null, "", low === high ? "#L" + low : "#L" + low + "-L" + high);
        } else {
          anchorLine = current;
          selectedRange = [current, current];
          select(current, current, false);
          history.replaceState(null, "", "#L" + current);
        }
        showPython(row);
        return;
      }
      if (event.target.closest("a.ly")) return; /* a layout alias: jump to its definition */
      const row = event.target.closest(".ln");
      if (!row) return;
      const text = window.getSelection ? String(window.getSelection()) : "";
      if (text) return; /* the user is selecting text */
      showPython(row);
    });

    /* IR line -> Python line, Python line -> IR lines */
    let hits = [];
    let hitKey = null; /* the data-py whose lines are marked, in parts loaded later too */
    let pythonSelected = null;
    const everyPass = document.getElementById("every-pass");
    function clearHits() {
      hits.forEach(function (element) { element.classList.remove("hit"); });
      hits = [];
      hitKey = null;
      if (pythonSelected) pythonSelected.classList.remove("sel");
      pythonSelected = null;
    }
    function pane(file) { return page.querySelector('.src-file[data-file="' + file + '"]'); }
    /* Python lines outside the window the page laid out wait in templates (app/web/source_window.py):
     * filled in when scrolled near, or when a line in them is needed */
    function fillPython(block) {
      const template = block.querySelector("template");
      if (template) block.replaceWith(template.content);
    }
    function ensurePython(section, number) {
      section.querySelectorAll(".pl-defer").forEach(function (block) {
        const start = Number(block.dataset.start);
        if (number >= start && number < start + Number(block.dataset.count)) fillPython(block);
      });
    }
    page.querySelectorAll(".src").forEach(function (source) {
      const blocks = source.querySelectorAll(".pl-defer");
      if (!blocks.length) return;
      if (!("IntersectionObserver" in window)) { blocks.forEach(fillPython); return; }
      const watcher = new IntersectionObserver(function (entries) {
        entries.forEach(function (entry) {
          if (!entry.isIntersecting) return;
          watcher.unobserve(entry.target);
          fillPython(entry.target);
        });
      }, { root: source, rootMargin: "200px 0px" });
      blocks.forEach(function (block) { watcher.observe(block); });
    });
    /* the browser's find (Ctrl/Cmd+F) and printing see only laid-out lines: lay out all of them first */
    function fillAllPython() { page.querySelectorAll(".pl-defer").forEach(fillPython); }
    document.addEventListener("keydown", function (event) {
      if ((event.ctrlKey || event.metaKey) && !event.altKey && (event.key === "f" || event.key === "F")) fillAllPython();
    });
    window.addEventListener("beforeprint", fillAllPython);
    function showTab(file) {
      page.querySelectorAll(".src-file").forEach(function (section) {
        section.hidden = section.dataset.file !== String(file);
        revealFirst(section);
      });
      page.querySelectorAll(".src-tabs a").forEach(function (tab) {
        tab.setAttribute("aria-selected", tab.dataset.file === String(file) ? "true" : "false");
      });
    }
    function scrollWithin(container, element) {
      if (!container || !element) return;
      const box = container.getBoundingClientRect();
      const target = element.getBoundingClientRect();
      if (target.top < box.top + 30 || target.bottom > box.bottom - 30) {
        container.scrollTop += target.top - box.top - box.height / 3;
      }
    }
    function markPython(file, number) {
      const section = pane(file);
      if (!section) return null;
      showTab(file);
      ensurePython(section, Number(number));
      const element = section.querySelector('.pl[data-l="' + number + '"]');
      if (element) {
        element.classList.add("sel");
        pythonSelected = element;
        scrollWithin(section.querySelector(".src"), element);
      }
      if (everyPass) {
        const base = page.dataset.map;
        everyPass.href = base + "?file=" + encodeURIComponent(section.dataset.path) + "&line=" + number;
        everyPass.textContent = "line " + number + " in every pass";
        everyPass.hidden = false;
      }
      return element;
    }
    /* key: "F:L", or several separated by spaces (a Helion line: the generated lines it became) */
    function markIR(key, root) {
      hitKey = key;
      key.split(" ").forEach(function (one) {
        (root || ir).querySelectorAll('.ln[data-py="' + one + '"]').forEach(function (element) {
          element.classList.add("hit");
          hits.push(element);
        });
      });
    }
    loadedHooks.push(function (part) { if (hitKey) markIR(hitKey, part); });
    /* the first line mapped to key, loaded: from the DOM, or from #ir-data for a long text */
    function firstHit(key) {
      if (!irData) return Promise.resolve(hits[0] || null);
      const found = key.split(" ").map(function (one) { return irData.py.indexOf(one); })
        .filter(function (at) { return at >= 0; });
      if (!found.length) return Promise.resolve(null);
      const index = Math.min.apply(null, found);
      return ensureLines(index + 1, index + 1).then(function () { return line(index + 1); });
    }
    function showPython(row) {
      clearHits();
      const key = row.dataset.py;
      if (!key) return;
      const parts = key.split(":");
      markIR(key);
      markPython(parts[0], parts[1]);
    }
    page.querySelectorAll(".src-file").forEach(function (section) {
      const file = section.dataset.file;
      section.addEventListener("click", function (event) {
        const element = event.target.closest(".pl");
        if (!element || String(window.getSelection ? window.getSelection() : "")) return;
        clearHits();
        const number = element.dataset.l;
        element.classList.add("sel");
        pythonSelected = element;
        const key = element.dataset.keys || file + ":" + number;
        markIR(key);
        markPython(file, number);
        firstHit(key).then(function (element) {
          if (!element || hitKey !== key) return;
          const box = irPane.getBoundingClientRect();
          const first = element.getBoundingClientRect();
          if (first.top < box.top || first.bottom > box.bottom) element.scrollIntoView({ block: "center" });
        }, function () {});
      });
    });
    /* each Python file opens at the first line this IR maps to, once it is visible */
    function revealFirst(section) {
      const source = section && section.querySelector(".src");
      if (!source || source.dataset.revealed || section.hidden) return;
      source.dataset.revealed = "1";
      ensurePython(section, Number(source.dataset.first));
      const first = source.querySelector('.pl[data-l="' + source.dataset.first + '"]');
      if (first) {
        const offset = first.getBoundingClientRect().top - source.getBoundingClientRect().top;
        source.scrollTop = Math.max(0, source.scrollTop + offset - 3 * first.offsetHeight);
      }
    }
    page.querySelectorAll(".src-file").forEach(revealFirst);
    page.querySelectorAll(".src-tabs a").forEach(function (tab) {
      tab.addEventListener("click", function (event) {
        event.preventDefault();
        showTab(tab.dataset.file);
      });
    });
    linked.then(function () {
      if (selected.length && selected[0].dataset.py) {
        const parts = selected[0].dataset.py.split(":");
        markPython(parts[0], parts[1]); /* the linked line's Python line, without marking its siblings */
      }
    });

    /* layout tooltips */
    let tipFor = null;
    function showTip(element) {
      const alias = element.dataset.ly;
      const key = element.dataset.enc;
      const template = document.getElementById(alias ? "ly-" + alias : "enc-" + key);
      if (!template || !tip) return;
      tip.replaceChildren(template.content.cloneNode(true));
      tip.hidden = false;
      tipFor = element;
      const box = element.getBoundingClientRect();
      const width = tip.offsetWidth;
      const height = tip.offsetHeight;
      let left = Math.min(box.left, window.innerWidth - width - 12);
      let top = box.bottom + 6;
      if (top + height > window.innerHeight - 8) top = Math.max(8, box.top - height - 6);
      tip.style.left = Math.max(8, left) + "px";
      tip.style.top = top + "px";
    }
    function hideTip() {
      if (tip) tip.hidden = true;
      tipFor = null;
    }
    page.addEventListener("mouseover", function (event) {
      const element = event.target.closest("a.ly, .ly-chip, .enc");
      if (element && element !== tipFor) showTip(element);
      else if (!element && tipFor) hideTip();
    });
    page.addEventListener("focusin", function (event) {
      const element = event.target.closest("a.ly, .ly-chip");
      if (element) showTip(element);
    });
    page.addEventListener("focusout", hideTip);
    irPane.addEventListener("scroll", hideTip, { passive: true });

    /* hardware-op filter: only one group's lines, the others folded */
    const chips = Array.from(page.querySelectorAll(".hw-chip"));
    function clearFolds() {
      ir.querySelectorAll(".fold").forEach(function (fold) { fold.remove(); });
      ir.querySelectorAll(".ln.unfold").forEach(function (element) { element.classList.remove("unfold"); });
    }
    let filterWanted = null;
    function filter(group) {
      filterWanted = group;
      if (group && pendingParts().length) {
        /* folding needs every line: load the remaining parts first (#ir-data counts them) */
        chips.forEach(function (chip) { chip.setAttribute("aria-pressed", chip.dataset.group === group ? "true" : "false"); });
        ensureAll().then(function () { if (filterWanted === group) applyFilter(group); }, function () {});
        return;
      }
      applyFilter(group);
    }
    function applyFilter(group) {
      clearFolds();
      chips.forEach(function (chip) { chip.setAttribute("aria-pressed", chip.dataset.group === group ? "true" : "false"); });
      if (!group) {
        delete ir.dataset.filter;
        return;
      }
      ir.dataset.filter = group;
      const className = "o-" + group;
      let run = [];
      function fold() {
        const shown = run.filter(function (element) { return !element.classList.contains("locdef"); });
        if (shown.length) {
          const button = document.createElement("button");
          button.type = "button";
          button.className = "fold";
          const locOnly = run.length - shown.length; /* hidden location lines sit inside the range too */
          button.textContent = "⋯ " + shown.length + " line" + (shown.length === 1 ? "" : "s") + " (L" +
            run[0].id.slice(1) + "–" + run[run.length - 1].id.slice(1) +
            (locOnly ? ", and " + locOnly + " location line" + (locOnly === 1 ? "" : "s") : "") + ")";
          const members = run;
          button.addEventListener("click", function () {
            members.forEach(function (element) { element.classList.add("unfold"); });
            button.remove();
          });
          run[0].before(button);
        }
        run = [];
      }
      ir.querySelectorAll(".ln").forEach(function (element) {
        if (element.classList.contains(className)) fold();
        else run.push(element);
      });
      fold();
      const first = ir.querySelector("." + className);
      if (first) first.scrollIntoView({ block: "center" });
    }
    chips.forEach(function (chip) {
      chip.addEventListener("click", function () {
        filter(chip.getAttribute("aria-pressed") === "true" ? null : chip.dataset.group);
      });
    });

    /* help and keys */
    function toggleHelp(show) {
      if (!help) return;
      help.hidden = show === undefined ? !help.hidden : !show;
    }
    page.querySelectorAll('[data-action="help"]').forEach(function (button) {
      button.addEventListener("click", function () { toggleHelp(); });
    });
    if (help) help.addEventListener("click", function (event) { if (event.target === help) toggleHelp(false); });
    function go(url) { if (url) window.location.href = url; }
    document.addEventListener("keydown", function (event) {
      if (typing(event)) return;
      const key = event.key;
      if (key === "Escape") {
        if (help && !help.hidden) { toggleHelp(false); return; }
        hideTip();
        clearHits();
        filter(null);
        return;
      }
      if (key === "?") { toggleHelp(); event.preventDefault(); return; }
      if (help && !help.hidden) return;
      if (key === "j" || key === "n") go(page.dataset.next);
      else if (key === "k" || key === "p") go(page.dataset.prev);
      else if (key === "d") go(page.dataset.diff);
      else if (key === "h" && firstSelected()) {
        /* op history of the selected line: .../c/N/s/I -> .../c/N/history?s=I&line=L */
        const at = /^(.*\/c\/\d+)\/s\/(\d+)/.exec(window.location.pathname);
        if (at) go(at[1] + "/history?s=" + at[2] + "&line=" + firstSelected().id.slice(1));
      }
      else if (key === "l") flip("show-loc");
      else if (key === "c") flip("no-color");
      else if (key === "w") flip("wrap");
      else if (key === "u") {
        const up = document.querySelector(".crumbs a:nth-last-of-type(1)");
        if (up) go(up.href);
      } else return;
      event.preventDefault();
    });
  }

  function start() {
    const compilation = document.querySelector('[data-page="compilation"]');
    if (compilation) setupCompilation(compilation);
    const snapshot = document.querySelector(".snap-page");
    if (snapshot) setupSnapshot(snapshot);
    (compilation || snapshot || document.body).dataset.ready = "1"; /* keys work from now on */
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
