// The layout inspector: draws who holds each element of one 2-D slice on a canvas, from the compact
// data in #layout-data (app/layouts/picture.py says what it holds). Hover a cell to read its owners
// beside the grid; select one (click, arrow keys) to outline every cell the same thread (bank, TMEM
// lane) holds; + - 0 zoom; #cell=r,c makes the selection shareable.
(function () {
  "use strict";
  const canvas = document.getElementById("layout-grid");
  const source = document.getElementById("layout-data");
  if (!canvas || !source) return;
  const D = JSON.parse(source.textContent);
  const R = D.rows, C = D.cols, N = R * C, base = D.base;
  const info = document.getElementById("layout-info");
  const hoverBox = document.getElementById("layout-hover");
  const scaleBox = document.getElementById("layout-scale");
  const scroller = document.getElementById("layout-scroll");
  const AX = 30, AY = 16;  // room for the row and column numbers

  function typed(item) {
    if (!item) return null;
    const raw = atob(item.data), bytes = new Uint8Array(raw.length);
    for (let i = 0; i < raw.length; i++) bytes[i] = raw.charCodeAt(i);
    const Kind = { u8: Uint8Array, u16: Uint16Array, u32: Uint32Array }[item.type];
    return new Kind(bytes.buffer);
  }

  // Per element of the slice: its label, colour (palette index), how many hold it; and for tables,
  // its owners as slot ids (start[i] .. start[i + 1] in slots), in the order the JSON lists them.
  const label = new Int32Array(N), colour = new Uint16Array(N), copies = new Uint16Array(N);
  let start = null, slots = null, dims = null, sizes = null, keyOf = null, ownerText = null;

  function elementOf(slot) {  // the element a slot holds: the XOR of its dimensions' entries
    let e = 0;
    for (let d = dims.length - 1; d >= 0; d--) {
      const n = sizes[d];
      e ^= dims[d][slot % n];
      slot = (slot / n) | 0;
    }
    return e;
  }

  function parts(slot) {  // a slot id -> its index in each dimension
    const out = new Array(dims.length);
    for (let d = dims.length - 1; d >= 0; d--) { out[d] = slot % sizes[d]; slot = (slot / sizes[d]) | 0; }
    return out;
  }

  if (D.tables) {
    const order = D.kind === "distributed" ? ["block", "warp", "lane", "register"] : ["block", "row", "col"];
    dims = order.map((name) => D.tables[name]);
    sizes = dims.map((t) => t.length);
    const total = sizes.reduce((a, b) => a * b, 1);
    start = new Int32Array(N + 1);
    for (let s = 0; s < total; s++) {
      const i = elementOf(s) - base;
      if (i >= 0 && i < N) start[i + 1]++;
    }
    for (let i = 0; i < N; i++) start[i + 1] += start[i];
    slots = new Int32Array(start[N]);
    const fill = start.slice(0, N);
    for (let s = 0; s < total; s++) {
      const i = elementOf(s) - base;
      if (i >= 0 && i < N) slots[fill[i]++] = s;
    }
    const multi = sizes[0] > 1;
    if (D.kind === "distributed") {
      const tpw = D.tpw;
      keyOf = (s) => { const p = parts(s); return p[1] * tpw + p[2]; };
      ownerText = (s) => {
        const [b, w, l, r] = parts(s);
        return "T" + (w * tpw + l) + " (warp " + w + ", lane " + l + ") register " + r + (multi ? " block " + b : "");
      };
      for (let i = 0; i < N; i++) {
        const p = parts(slots[start[i]]);
        label[i] = p[2]; colour[i] = p[1]; copies[i] = start[i + 1] - start[i];
      }
    } else {
      keyOf = (s) => parts(s)[1];
      ownerText = (s) => {
        const [b, r, c] = parts(s);
        return "TMEM lane " + r + ", column " + c + (multi ? ", CTA " + b : "");
      };
      for (let i = 0; i < N; i++) {
        const p = parts(slots[start[i]]);
        label[i] = p[1]; colour[i] = Math.min(p[1] >> 5, 3); copies[i] = start[i + 1] - start[i];
      }
    }
  } else {
    const offsets = typed(D.offsets), banks = typed(D.banks), blocks = typed(D.block_of);
    label.set(offsets); colour.set(banks); copies.fill(1);
    keyOf = null;
    ownerText = (i) => "offset " + offsets[i] + ", bank " + banks[i] + (blocks ? ", block " + blocks[i] : "");
  }

  function coord(i) {  // the element's index in the whole tensor, as "r, c" (or more dims)
    let e = base + i;
    const shape = D.shape, out = [];
    for (let d = shape.length - 1; d >= 0; d--) { out.push(e % shape[d]); e = Math.floor(e / shape[d]); }
    return out.reverse().join(", ");
  }

  function answer(i) {
    const owners = [];
    if (start) for (let k = start[i]; k < start[i + 1]; k++) owners.push(ownerText(slots[k]));
    else owners.push(ownerText(i));
    return "(" + coord(i) + "): " + owners.join("\n");
  }

  function sameAs(i) {  // every cell the first owner's thread (lane; bank) also holds
    const mark = new Uint8Array(N);
    if (start) {
      const key = keyOf(slots[start[i]]);
      for (let k = 0; k < slots.length; k++) if (keyOf(slots[k]) === key) mark[elementOf(slots[k]) - base] = 1;
    } else {
      for (let j = 0; j < N; j++) if (colour[j] === colour[i]) mark[j] = 1;
    }
    return mark;
  }

  // --- drawing: the cells on the canvas, outlines on an overlay canvas above it
  const overlay = document.createElement("canvas");
  overlay.className = "layout-overlay";
  overlay.setAttribute("aria-hidden", "true");
  canvas.after(overlay);
  let size = 0, fit = true, selected = -1, hovered = -1, marked = null;

  function fitSize() {
    const width = scroller.clientWidth - AX - 4;
    const height = window.innerHeight - scroller.getBoundingClientRect().top - AY - 24;
    return Math.max(2, Math.min(40, Math.floor(Math.min(width / C, Math.max(height, 240) / R))));
  }

  function setup(ctx, target, width, height) {
    const ratio = window.devicePixelRatio || 1;
    target.width = Math.round(width * ratio); target.height = Math.round(height * ratio);
    target.style.width = width + "px"; target.style.height = height + "px";
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
  }

  function draw() {
    size = fit ? fitSize() : size;
    const width = AX + C * size, height = AY + R * size;
    const ctx = canvas.getContext("2d");
    setup(ctx, canvas, width, height);
    setup(overlay.getContext("2d"), overlay, width, height);
    // One pixel a cell in an image, scaled up without smoothing: one draw, however many cells.
    const image = new ImageData(C, R), pixels = new Uint32Array(image.data.buffer);
    const rgba = D.palette.map((hex) => {
      const v = parseInt(hex.slice(1), 16);
      return (0xff << 24 | (v & 0xff) << 16 | (v & 0xff00) | (v >> 16 & 0xff)) >>> 0;  // little-endian ABGR
    });
    for (let i = 0; i < N; i++) pixels[i] = rgba[colour[i]];
    const cells = document.createElement("canvas");
    cells.width = C; cells.height = R;
    cells.getContext("2d").putImageData(image, 0, 0);
    ctx.imageSmoothingEnabled = false;
    ctx.drawImage(cells, AX, AY, C * size, R * size);
    if (size >= 5) {  // cell borders
      ctx.fillStyle = "rgba(255, 255, 255, 0.75)";
      for (let c = 1; c <= C; c++) ctx.fillRect(AX + c * size - 1, AY, 1, R * size);
      for (let r = 1; r <= R; r++) ctx.fillRect(AX, AY + r * size - 1, C * size, 1);
    }
    ctx.fillStyle = "#1f2328";
    if (size >= 14) {
      const font = Math.min(11, Math.floor(size * 0.5));
      ctx.font = font + "px ui-monospace, monospace";
      ctx.textAlign = "center"; ctx.textBaseline = "middle";
      const room = Math.floor((size - 2) / (font * 0.62));
      for (let i = 0; i < N; i++) {
        const text = String(label[i]);
        if (text.length <= room) ctx.fillText(text, AX + (i % C) * size + size / 2, AY + ((i / C) | 0) * size + size / 2 + 0.5);
      }
    }
    if (size >= 8) {
      for (let i = 0; i < N; i++) {
        if (copies[i] > 1) {
          ctx.beginPath();
          ctx.arc(AX + (i % C + 1) * size - 3.5, AY + ((i / C) | 0) * size + 3, 1.8, 0, 2 * Math.PI);
          ctx.fill();
        }
      }
    }
    ctx.fillStyle = getComputedStyle(canvas).color;
    ctx.font = "9px ui-monospace, monospace";
    let step = 8;
    while (step * size < 30) step *= 2;
    ctx.textAlign = "center"; ctx.textBaseline = "alphabetic";
    for (let c = 0; c < C; c += step) ctx.fillText(String(c), AX + c * size + Math.min(size, 24) / 2, AY - 4);
    ctx.textAlign = "right"; ctx.textBaseline = "middle";
    for (let r = 0; r < R; r += step) ctx.fillText(String(r), AX - 4, AY + r * size + Math.min(size, 24) / 2);
    canvas.dataset.cellSize = String(size);
    canvas.dataset.originX = String(AX); canvas.dataset.originY = String(AY);
    if (scaleBox) scaleBox.textContent = size + " px a cell" + (fit ? " (fit)" : "");
    outline();
    canvas.dataset.drawn = "1";
  }

  function outline() {
    const ctx = overlay.getContext("2d");
    ctx.clearRect(0, 0, overlay.width, overlay.height);
    const box = (i, colourName, line) => {
      ctx.strokeStyle = colourName; ctx.lineWidth = line;
      ctx.strokeRect(AX + (i % C) * size + line / 2, AY + ((i / C) | 0) * size + line / 2,
        Math.max(size - line, 1), Math.max(size - line, 1));
    };
    const thin = size >= 6 ? 2 : 1;
    if (marked) for (let i = 0; i < N; i++) if (marked[i] && i !== selected) box(i, "#0969da", thin);
    if (hovered >= 0 && hovered !== selected) box(hovered, "#1f2328", thin);
    if (selected >= 0) box(selected, "#cf222e", Math.min(3, thin + 1));
  }

  function cellAt(event) {
    const rect = canvas.getBoundingClientRect();
    const c = Math.floor((event.clientX - rect.left - AX) / size), r = Math.floor((event.clientY - rect.top - AY) / size);
    return r >= 0 && r < R && c >= 0 && c < C ? r * C + c : -1;
  }

  function select(i, updateHash) {
    if (i < 0 || i >= N) return;
    selected = i;
    marked = sameAs(i);
    info.textContent = answer(i);
    if (updateHash) history.replaceState(null, "", "#cell=" + ((i / C) | 0) + "," + (i % C));
    outline();
  }

  overlay.addEventListener("mousemove", (event) => {
    const i = cellAt(event);
    if (i === hovered) return;
    hovered = i;
    if (hoverBox) hoverBox.textContent = i >= 0 ? answer(i) : "Hover a cell.";
    outline();
  });
  overlay.addEventListener("mouseleave", () => { hovered = -1; outline(); });
  overlay.addEventListener("click", (event) => {
    const i = cellAt(event);
    if (i >= 0) { select(i, true); canvas.focus({ preventScroll: true }); }
  });

  function zoom(how) {
    if (how === "fit") fit = true;
    else { fit = false; size = how === "in" ? Math.min(48, Math.ceil(size * 1.5)) : Math.max(2, Math.floor(size / 1.5)); }
    draw();
  }
  document.querySelectorAll("[data-zoom]").forEach((button) => button.addEventListener("click", () => zoom(button.dataset.zoom)));

  const moves = { ArrowLeft: [0, -1], ArrowRight: [0, 1], ArrowUp: [-1, 0], ArrowDown: [1, 0] };
  canvas.addEventListener("keydown", (event) => {
    if (moves[event.key]) {
      event.preventDefault();
      if (selected < 0) { select(0, true); return; }
      const r = ((selected / C) | 0) + moves[event.key][0], c = (selected % C) + moves[event.key][1];
      if (r >= 0 && r < R && c >= 0 && c < C) select(r * C + c, true);
    } else if (event.key === "+" || event.key === "=") zoom("in");
    else if (event.key === "-") zoom("out");
    else if (event.key === "0") zoom("fit");
  });
  let resizing = 0;
  window.addEventListener("resize", () => {
    if (!fit) return;
    cancelAnimationFrame(resizing);
    resizing = requestAnimationFrame(draw);
  });

  draw();
  const m = /#cell=(\d+),(\d+)/.exec(location.hash);
  if (m && Number(m[1]) < R && Number(m[2]) < C) select(Number(m[1]) * C + Number(m[2]), false);
})();
