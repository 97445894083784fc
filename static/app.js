/* irlens page behaviour. Everything here enhances pages that work without JavaScript:
 * - the upload form: drag and drop of files and folders, an upload progress bar, errors inline;
 * - tables with data-sortable (click a th[data-sort]) and inputs with data-filter-table;
 * - <time datetime> elements get a relative label ("3 min ago") and the local time as a tooltip.
 * User data is only ever put in the page with textContent, never as HTML.
 */
(function () {
  "use strict";

  function humanBytes(bytes) {
    if (!isFinite(bytes)) return "";
    const units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let value = bytes;
    let unit = 0;
    while (value >= 1024 && unit < units.length - 1) {
      value /= 1024;
      unit += 1;
    }
    return (unit === 0 ? String(value) : value.toFixed(value < 10 ? 1 : 0)) + " " + units[unit];
  }

  /* ---- upload ------------------------------------------------------------------------------ */

  // Read every file under a dropped folder entry, keeping its path relative to the drop.
  function readEntry(entry, prefix, out) {
    return new Promise(function (resolve) {
      if (entry.isFile) {
        entry.file(
          function (file) {
            out.push({ file: file, path: prefix + file.name });
            resolve();
          },
          function () { resolve(); }
        );
      } else if (entry.isDirectory) {
        const reader = entry.createReader();
        const children = [];
        // readEntries returns the folder in batches; an empty batch means the end.
        const next = function () {
          reader.readEntries(
            function (batch) {
              if (batch.length === 0) {
                Promise.all(children.map(function (child) {
                  return readEntry(child, prefix + entry.name + "/", out);
                })).then(resolve);
              } else {
                children.push.apply(children, batch);
                next();
              }
            },
            function () { resolve(); }
          );
        };
        next();
      } else {
        resolve();
      }
    });
  }

  function droppedFiles(dataTransfer) {
    const items = Array.from(dataTransfer.items || []).filter(function (item) { return item.kind === "file"; });
    if (items.length === 0) {
      return Promise.resolve(Array.from(dataTransfer.files || []).map(function (file) {
        return { file: file, path: file.name };
      }));
    }
    const out = [];
    const pending = items.map(function (item) {
      // Folders only come through entries; a plain file (or a browser without entries) as itself.
      const entry = typeof item.webkitGetAsEntry === "function" ? item.webkitGetAsEntry() : null;
      if (entry) return readEntry(entry, "", out);
      const file = item.getAsFile();
      if (file) out.push({ file: file, path: file.name });
      return Promise.resolve();
    });
    return Promise.all(pending).then(function () { return out; });
  }

  function setupUpload(form) {
    const dropzone = form.querySelector("#dropzone");
    const fileInput = form.querySelector("#file-input");
    const folderInput = form.querySelector("#folder-input");
    const picked = form.querySelector("#picked");
    const button = form.querySelector("#upload-button");
    const clearButton = form.querySelector("#clear-button");
    const progressBox = form.querySelector("#upload-progress");
    const progress = form.querySelector("#progress");
    const bar = progress.querySelector(".bar");
    const status = form.querySelector("#progress-status");
    const detail = form.querySelector("#progress-detail");
    const errorBox = form.querySelector("#upload-error");
    const errorText = form.querySelector("#upload-error-text");
    const maxBytes = Number(form.dataset.maxBytes) || Infinity;
    let files = []; // [{file, path}]

    function setState(state) {
      form.dataset.state = state;
      const busy = state === "uploading" || state === "ingesting" || state === "done";
      button.disabled = busy || files.length === 0;
      clearButton.disabled = busy;
      fileInput.disabled = busy;
      folderInput.disabled = busy;
    }

    function showError(message) {
      errorText.textContent = message;
      errorBox.hidden = false;
    }

    function render() {
      picked.textContent = "";
      const total = files.reduce(function (sum, entry) { return sum + entry.file.size; }, 0);
      const shown = files.slice(0, 8);
      shown.forEach(function (entry) {
        const li = document.createElement("li");
        const name = document.createElement("span");
        name.className = "truncate";
        name.textContent = entry.path;
        name.title = entry.path;
        const size = document.createElement("span");
        size.className = "size";
        size.textContent = humanBytes(entry.file.size);
        li.append(name, size);
        picked.append(li);
      });
      if (files.length > shown.length) {
        const li = document.createElement("li");
        const more = document.createElement("span");
        more.className = "muted";
        more.textContent = "… and " + (files.length - shown.length) + " more files";
        const size = document.createElement("span");
        size.className = "size";
        size.textContent = humanBytes(total) + " in all";
        li.append(more, size);
        picked.append(li);
      }
      picked.hidden = files.length === 0;
      clearButton.hidden = files.length === 0;
      button.textContent = files.length > 1 ? "Upload " + files.length + " files" : "Upload";
      setState(form.dataset.state === "error" ? "error" : "idle");
      if (total > maxBytes) {
        showError("these files are " + humanBytes(total) + ", more than the " + humanBytes(maxBytes) + " limit");
      }
    }

    function add(entries) {
      const seen = new Set(files.map(function (entry) { return entry.path + "\u0000" + entry.file.size; }));
      entries.forEach(function (entry) {
        const key = entry.path + "\u0000" + entry.file.size;
        if (!seen.has(key)) {
          seen.add(key);
          files.push(entry);
        }
      });
      errorBox.hidden = true;
      render();
    }

    fileInput.addEventListener("change", function () {
      add(Array.from(fileInput.files).map(function (file) { return { file: file, path: file.name }; }));
      fileInput.value = "";
    });
    folderInput.addEventListener("change", function () {
      add(Array.from(folderInput.files).map(function (file) {
        return { file: file, path: file.webkitRelativePath || file.name };
      }));
      folderInput.value = "";
    });
    clearButton.addEventListener("click", function () {
      files = [];
      errorBox.hidden = true;
      render();
    });

    let depth = 0;
    ["dragenter", "dragover"].forEach(function (type) {
      dropzone.addEventListener(type, function (event) {
        event.preventDefault();
        if (type === "dragenter") depth += 1;
        dropzone.classList.add("dragover");
      });
    });
    dropzone.addEventListener("dragleave", function () {
      depth = Math.max(0, depth - 1);
      if (depth === 0) dropzone.classList.remove("dragover");
    });
    dropzone.addEventListener("drop", function (event) {
      event.preventDefault();
      depth = 0;
      dropzone.classList.remove("dragover");
      if (form.dataset.state === "uploading" || form.dataset.state === "ingesting") return;
      droppedFiles(event.dataTransfer).then(add);
    });
    // A file dropped beside the zone would make the browser open it and leave the page.
    window.addEventListener("dragover", function (event) { event.preventDefault(); });
    window.addEventListener("drop", function (event) { event.preventDefault(); });

    function showProgress(loaded, total) {
      const share = total ? Math.min(1, loaded / total) : 0;
      bar.style.width = (share * 100).toFixed(1) + "%";
      progress.setAttribute("aria-valuenow", String(Math.round(share * 100)));
      status.textContent = "Uploading… " + Math.round(share * 100) + "%";
      detail.textContent = humanBytes(loaded) + " of " + humanBytes(total);
    }

    form.addEventListener("submit", function (event) {
      event.preventDefault();
      if (files.length === 0) {
        showError("choose or drop at least one file first");
        return;
      }
      const body = new FormData();
      body.append("csrf_token", form.querySelector("input[name=csrf_token]").value);
      const title = form.querySelector("#title-input").value.trim();
      if (title) body.append("title", title);
      const labels = form.querySelector("#labels-input");  // "triton=3.7.1, commit=abc123"
      if (labels && labels.value.trim()) body.append("labels", labels.value.trim());
      files.forEach(function (entry) { body.append("file", entry.file, entry.path); });

      const total = files.reduce(function (sum, entry) { return sum + entry.file.size; }, 0);
      errorBox.hidden = true;
      progressBox.hidden = false;
      progress.classList.remove("indeterminate", "done");
      showProgress(0, total);
      setState("uploading");

      const request = new XMLHttpRequest();
      request.open("POST", form.action);
      request.setRequestHeader("Accept", "application/json");
      request.setRequestHeader("X-Requested-With", "XMLHttpRequest");
      request.upload.addEventListener("progress", function (progressEvent) {
        if (progressEvent.lengthComputable) showProgress(progressEvent.loaded, progressEvent.total);
      });
      request.upload.addEventListener("load", function () {
        setState("ingesting");
        progress.classList.add("indeterminate");
        progress.removeAttribute("aria-valuenow");
        status.textContent = "Ingesting…";
        detail.textContent = "splitting dumps into passes";
      });
      request.addEventListener("load", function () {
        let reply = null;
        try {
          reply = JSON.parse(request.responseText);
        } catch (error) {
          reply = null;
        }
        if (request.status === 201 && reply && reply.url) {
          setState("done");
          progress.classList.remove("indeterminate");
          progress.classList.add("done");
          const count = (reply.compilations || []).length;
          status.textContent = "Ingested " + count + " compilation" + (count === 1 ? "" : "s");
          detail.textContent = "opening the run…";
          window.location.assign(request.getResponseHeader("Location") || reply.url);
          return;
        }
        const message = (reply && (reply.error || reply.detail)) ||
          ("the server answered " + request.status + " " + request.statusText);
        fail(typeof message === "string" ? message : JSON.stringify(message));
      });
      request.addEventListener("error", function () {
        fail("the connection failed before the server answered");
      });
      request.addEventListener("abort", function () { fail("the upload was cancelled"); });
      request.send(body);
    });

    function fail(message) {
      progressBox.hidden = true;
      progress.classList.remove("indeterminate");
      setState("error");
      showError(message);
    }

    render();
  }

  /* ---- tables ------------------------------------------------------------------------------ */

  function cellValue(row, index) {
    const cell = row.cells[index];
    if (!cell) return "";
    return cell.dataset.value !== undefined ? cell.dataset.value : cell.textContent.trim();
  }

  function setupSortable(table) {
    const headers = Array.from(table.tHead ? table.tHead.rows[0].cells : []);
    headers.forEach(function (th, index) {
      const kind = th.dataset.sort;
      if (!kind) return;
      th.tabIndex = 0;
      const sort = function () {
        const ascending = th.getAttribute("aria-sort") !== "ascending";
        headers.forEach(function (other) { if (other !== th) other.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
        const body = table.tBodies[0];
        const rows = Array.from(body.rows);
        rows.sort(function (a, b) {
          let left = cellValue(a, index);
          let right = cellValue(b, index);
          let order;
          if (kind === "num") {
            order = (parseFloat(left) || 0) - (parseFloat(right) || 0);
          } else {
            order = left.localeCompare(right, undefined, { numeric: true, sensitivity: "base" });
          }
          return ascending ? order : -order;
        });
        rows.forEach(function (row) { body.append(row); });
      };
      th.addEventListener("click", sort);
      th.addEventListener("keydown", function (event) {
        if (event.key === "Enter" || event.key === " ") {
          event.preventDefault();
          sort();
        }
      });
    });
  }

  function setupFilter(input) {
    const table = document.querySelector(input.dataset.filterTable);
    if (!table) return;
    input.addEventListener("input", function () {
      const words = input.value.toLowerCase().split(/\s+/).filter(Boolean);
      Array.from(table.tBodies[0].rows).forEach(function (row) {
        const text = row.textContent.toLowerCase();
        const match = words.every(function (word) { return text.indexOf(word) !== -1; });
        row.classList.toggle("filtered-out", !match);
      });
    });
  }

  /* ---- times ------------------------------------------------------------------------------- */

  function relativeTime(date) {
    const seconds = (Date.now() - date.getTime()) / 1000;
    if (seconds < 45) return "just now";
    const steps = [[60, "min", 60], [24, "h", 3600], [30, "d", 86400]];
    for (let i = 0; i < steps.length; i += 1) {
      const value = Math.round(seconds / steps[i][2]);
      if (value < steps[i][0]) return value + " " + steps[i][1] + " ago";
    }
    return null;
  }

  function setupTime(element) {
    const date = new Date(element.getAttribute("datetime"));
    if (isNaN(date.getTime())) return;
    const local = date.toLocaleString(undefined, {
      year: "numeric", month: "short", day: "numeric", hour: "2-digit", minute: "2-digit",
    });
    element.title = local;
    element.textContent = relativeTime(date) || local;
  }

  function init() {
    const form = document.getElementById("upload-form");
    if (form) setupUpload(form);
    document.querySelectorAll("table[data-sortable]").forEach(setupSortable);
    document.querySelectorAll("input[data-filter-table]").forEach(setupFilter);
    document.querySelectorAll("time[datetime]").forEach(setupTime);
    // a choice that answers at once (the map page's pass): submit its form on change
    document.querySelectorAll("select[data-autosubmit]").forEach(function (select) {
      select.addEventListener("change", function () { select.form.requestSubmit(); });
    });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})();
