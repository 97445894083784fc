// The snapshot page's Python pane: hide it (the "python" switch) or drag its left edge to resize it
// (arrow keys on the edge too); the choice is remembered in localStorage for every snapshot page.
(function () {
  "use strict";
  const KEY = "irlens.snapshot.pythonPane";
  const body = document.querySelector(".snap-body");
  const pane = document.getElementById("src-pane");
  const toggle = document.getElementById("python-toggle");
  const split = document.getElementById("pane-split");
  if (!body || !pane || !toggle) return;
  let prefs = {};
  try { prefs = JSON.parse(localStorage.getItem(KEY)) || {}; } catch (error) { prefs = {}; }
  function save() { try { localStorage.setItem(KEY, JSON.stringify(prefs)); } catch (error) { /* private mode */ } }
  function clamp(width) { return Math.round(Math.max(220, Math.min(width, body.clientWidth - 320))); }
  function apply() {
    body.classList.toggle("src-hidden", Boolean(prefs.hidden));
    toggle.setAttribute("aria-checked", prefs.hidden ? "false" : "true");
    if (prefs.width) body.style.setProperty("--src-w", clamp(prefs.width) + "px");
    else body.style.removeProperty("--src-w");
  }
  toggle.hidden = false;
  if (split) split.hidden = false;
  apply();
  toggle.addEventListener("click", () => { prefs.hidden = !prefs.hidden; save(); apply(); });
  if (!split) return;
  split.addEventListener("pointerdown", (event) => {
    event.preventDefault();
    split.setPointerCapture(event.pointerId);
    body.classList.add("resizing");
    const move = (e) => { prefs.width = clamp(body.getBoundingClientRect().right - e.clientX); apply(); };
    const up = () => {
      split.removeEventListener("pointermove", move);
      body.classList.remove("resizing");
      save();
    };
    split.addEventListener("pointermove", move);
    split.addEventListener("pointerup", up, { once: true });
    split.addEventListener("pointercancel", up, { once: true });
  });
  split.addEventListener("keydown", (event) => {
    const step = { ArrowLeft: 40, ArrowRight: -40 }[event.key];
    if (!step) return;
    event.preventDefault();
    prefs.width = clamp((prefs.width || pane.getBoundingClientRect().width) + step);
    save();
    apply();
  });
})();
