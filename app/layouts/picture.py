"""The layout page's picture model: one 2-D slice of the tensor as compact data that
static/layout.js draws on a canvas. Pure data, no per-cell markup: a 128x128 distributed layout
is a few hundred bytes of tables, a shared one two typed arrays (base64) of one entry per element.

Distributed and tensor-memory layouts are sent as Triton's linear layout turned into one table per
hardware dimension (register, lane, warp, block; or row, column, block): entry i of a table is the
row-major element index that basis combination i reaches, and a slot's element is the XOR of its
dimensions' entries (sizes are powers of two, so XOR of coordinates is XOR of indices; see
app/layouts/mapping.py, whose per-element owners are the same walk). Shared layouts are sent as
the offsets and banks mapping.describe computes per element.
"""

from __future__ import annotations

import base64
import colorsys
from array import array

from app.layouts.errors import LayoutError

COLUMNS_1D = 64  # a 1-D tensor is drawn in rows of this many elements


def colour(index: int, count: int) -> str:
    """Hues spread evenly; past 12 (banks), neighbours also alternate in lightness to stay apart.
    As #rrggbb: the page writes these into an image's pixels."""
    hue = index * 360 // max(count, 1)
    light = 78 if count <= 12 or index % 2 == 0 else 88
    red, green, blue = colorsys.hls_to_rgb(hue / 360, light / 100, 0.62)
    return "#" + "".join(f"{round(v * 255):02x}" for v in (red, green, blue))


def _lead_index(shape: list[int], lead: str) -> list[int]:
    """Which 2-D slice of a rank >= 3 tensor: the leading indices, "0,1" style."""
    want = len(shape) - 2
    if want <= 0:
        return []
    parts = [p for p in lead.split(",") if p.strip()] if lead else []
    if not parts:
        return [0] * want
    if len(parts) != want or not all(p.strip().isascii() and p.strip().isdigit() and len(p.strip()) <= 9 for p in parts):
        raise LayoutError(f"lead must be {want} comma-separated indices")
    idx = [int(p) for p in parts]
    if any(i >= s for i, s in zip(idx, shape)):
        raise LayoutError("lead index outside the shape")
    return idx


def _flat_table(bases: list[list[int]], shape: list[int]) -> list[int]:
    """The element index every combination of these bases reaches (combination i: the XOR of the
    bases whose bit is set in i), row-major over `shape`."""
    flat = []
    for basis in bases:
        index = 0
        for size, value in zip(shape, basis):
            index = index * size + value
        flat.append(index)
    table = [0]
    for b in flat:
        table += [t ^ b for t in table]
    return table


def _b64(values: list[int], code: str) -> str:
    data = array(code, values)
    if data.itemsize > 1 and array("H", [1]).tobytes()[0] != 1:
        data.byteswap()  # the page reads little-endian typed arrays
    return base64.b64encode(data.tobytes()).decode("ascii")


def _typed(values: list[int]) -> dict:
    """The smallest typed array that holds `values` (all >= 0), base64."""
    top = max(values, default=0)
    code, name = ("B", "u8") if top < 1 << 8 else ("H", "u16") if top < 1 << 16 else ("I", "u32")
    return {"type": name, "data": _b64(values, code)}


def picture(layout: dict, lead: str = "") -> dict:
    """What the page draws: the slice's rows and columns, where its elements start in the tensor,
    the palette, legend and notes, and `data` for static/layout.js."""
    shape = layout["shape"]
    kind = layout["kind"]
    notes = []
    if len(shape) == 1:
        cols = min(shape[0], COLUMNS_1D)
        rows = shape[0] // cols
        base = 0
        if rows > 1:
            notes.append(f"a 1-D tensor of {shape[0]} drawn in rows of {cols}")
    else:
        lead_idx = _lead_index(shape, lead)
        rows, cols = shape[-2], shape[-1]
        base = 0
        for i, s in zip(lead_idx, shape):
            base = base * s + i
        base *= rows * cols
        if lead_idx:
            notes.append(f"the slice [{', '.join(map(str, lead_idx))}, :, :] of a rank-{len(shape)} tensor")
    data: dict = {"kind": kind, "shape": shape, "rows": rows, "cols": cols, "base": base}
    if kind == "distributed":
        warps = layout["warps"]
        palette = [colour(w, warps) for w in range(warps)]
        legend = [{"label": f"warp {w}", "colour": palette[w]} for w in range(warps)]
        data["tpw"] = layout["threads_per_warp"]
        data["tables"] = {dim: _flat_table(layout["bases"][dim], shape)
                          for dim in ("block", "warp", "lane", "register")}
        broadcast = max(len(owners) for owners in layout["owners"])
        if broadcast > 1:
            notes.append(f"broadcast: some elements are held by {broadcast} threads (all are listed on hover)")
    elif kind == "shared":
        palette = [colour(b, 32) for b in range(32)]
        legend = [{"label": f"bank {b}", "colour": palette[b]} for b in range(32)]
        end = base + rows * cols
        data["offsets"] = _typed(layout["offsets"][base:end])
        data["banks"] = _typed(layout["banks"][base:end])
        if "block_of" in layout:
            data["block_of"] = _typed(layout["block_of"][base:end])
    else:
        palette = [colour(q, 4) for q in range(4)]
        legend = [{"label": f"lanes {32 * q}-{32 * q + 31}", "colour": palette[q]} for q in range(4)]
        data["tables"] = {dim: _flat_table(layout["bases"].get(dim, []), shape) for dim in ("block", "row", "col")}
    data["palette"] = palette
    return {"rows": rows, "cols": cols, "legend": legend, "notes": notes, "data": data}
