/* Suggestions as you type in the top bar's search box (templates/_manage_nav.html).
 * The word at the caret (`op:tma`, `group:`, a bare kernel name) is sent to the box's data-suggest-url,
 * debounced; the server answers the options of the listbox, every name escaped (app/insight/search_suggest.py).
 * ArrowDown/ArrowUp move through them, Enter or a click puts the choice in place of the word and searches,
 * Escape closes the list. Without this script the box is a plain search form.
 */
(function () {
  "use strict";

  const DELAY_MS = 150;
  // One word of the query, as app/insight/run_search.py TOKEN reads it; a quote still open runs to the end.
  const TOKEN = /(?:[A-Za-z]+:)?(?:"[^"]*"?|\S+)/g;

  // The word holding the caret: {start, end, text}, or null when the caret is between words.
  function wordAt(text, caret) {
    TOKEN.lastIndex = 0;
    let match;
    while ((match = TOKEN.exec(text)) !== null) {
      const start = match.index;
      const end = start + match[0].length;
      if (start <= caret && caret <= end) return { start: start, end: end, text: match[0] };
      if (start > caret) break;
    }
    return null;
  }

  function setup(input) {
    const form = input.form;
    const list = form ? form.querySelector('[role="listbox"]') : null;
    if (!form || !list) return;
    input.setAttribute("role", "combobox");
    input.setAttribute("aria-autocomplete", "list");
    input.setAttribute("aria-controls", list.id);
    input.setAttribute("aria-expanded", "false");
    let timer = 0;
    let asked = 0; // the newest request's number: an older answer arriving late is dropped
    let active = -1;

    function options() {
      return Array.from(list.querySelectorAll('[role="option"]'));
    }

    function close() {
      list.hidden = true;
      active = -1;
      input.setAttribute("aria-expanded", "false");
      input.removeAttribute("aria-activedescendant");
    }

    function highlight(index) {
      const all = options();
      active = all.length ? (index + all.length) % all.length : -1;
      all.forEach(function (option, i) { option.setAttribute("aria-selected", i === active ? "true" : "false"); });
      if (active >= 0) {
        input.setAttribute("aria-activedescendant", all[active].id);
        all[active].scrollIntoView({ block: "nearest" });
      } else {
        input.removeAttribute("aria-activedescendant");
      }
    }

    function show(html) {
      // The answer is our server's template, escaped there; a <template> keeps it inert while it is read.
      const holder = document.createElement("template");
      holder.innerHTML = html;
      const found = Array.from(holder.content.querySelectorAll('li[role="option"]'));
      list.replaceChildren.apply(list, found);
      active = -1;
      input.removeAttribute("aria-activedescendant");
      if (found.length === 0 || document.activeElement !== input) {
        close();
        return;
      }
      list.hidden = false;
      input.setAttribute("aria-expanded", "true");
    }

    function ask() {
      const word = wordAt(input.value, input.selectionStart === null ? input.value.length : input.selectionStart);
      asked += 1;
      const number = asked;
      if (!word) {
        close();
        return;
      }
      const url = input.dataset.suggestUrl + "?q=" + encodeURIComponent(word.text);
      fetch(url, { headers: { Accept: "text/html" }, credentials: "same-origin" })
        .then(function (response) { return response.ok ? response.text() : ""; })
        .then(function (html) { if (number === asked) show(html); })
        .catch(function () { if (number === asked) close(); });
    }

    function pick(option) {
      const caret = input.selectionStart === null ? input.value.length : input.selectionStart;
      const word = wordAt(input.value, caret) || { start: caret, end: caret };
      const value = option.dataset.value;
      input.value = input.value.slice(0, word.start) + value + input.value.slice(word.end);
      const at = word.start + value.length;
      input.setSelectionRange(at, at);
      asked += 1; // an answer still on its way is for the old word
      close();
      form.requestSubmit();
    }

    input.addEventListener("input", function () {
      window.clearTimeout(timer);
      timer = window.setTimeout(ask, DELAY_MS);
    });
    input.addEventListener("keydown", function (event) {
      const open = !list.hidden;
      if (event.key === "ArrowDown" || event.key === "ArrowUp") {
        if (!open) {
          if (options().length === 0) return;
          list.hidden = false;
          input.setAttribute("aria-expanded", "true");
        }
        event.preventDefault();
        highlight(active === -1 && event.key === "ArrowUp" ? -1 : active + (event.key === "ArrowDown" ? 1 : -1));
      } else if (event.key === "Enter" && open && active >= 0) {
        event.preventDefault();
        pick(options()[active]);
      } else if (event.key === "Escape" && open) {
        event.preventDefault(); // and keep the text: a search box would clear itself
        close();
      } else if (event.key === "Tab") {
        close();
      }
    });
    input.addEventListener("blur", close);
    // mousedown would take the focus from the box (and close the list) before the click
    list.addEventListener("mousedown", function (event) { event.preventDefault(); });
    list.addEventListener("click", function (event) {
      const option = event.target.closest('[role="option"]');
      if (option) pick(option);
    });
  }

  function init() {
    document.querySelectorAll("input[data-suggest-url]").forEach(setup);
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})();
