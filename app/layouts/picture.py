"""The layout page's picture model: a window of at most 64 x 64 cells of one 2-D slice, with
each cell's label, colour and hover text. Pure data; templates/layout.html draws it as SVG."""

from __future__ import annotations

from app.layouts.errors import LayoutError

WINDOW = 64


def _colour(index: int, count: int) -> str:
    """Hues spread evenly; past 12 (banks), neighbours also alternate in lightness to stay apart."""
    hue = index * 360 // max(count, 1)
    light = 78 if count <= 12 or index % 2 == 0 else 88
    return f"hsl({hue}, 62%, {light}%)"


def _lead_index(shape: list[int], lead: str) -> list[int]:
    """Which 2-D slice of a rank >= 3 tensor: the leading indices, "0,1" style."""
    want = len(shape) - 2
    if want <= 0:
        return []
    parts = [p for p in lead.split(",") if p.strip()] if lead else []
    if not parts:
        return [0] * want
    if len(parts) != want or not all(p.strip().isdigit() for p in parts):
        raise LayoutError(f"lead must be {want} comma-separated indices")
    idx = [int(p) for p in parts]
    if any(i >= s for i, s in zip(idx, shape)):
        raise LayoutError("lead index outside the shape")
    return idx


def picture(layout: dict, row0: int = 0, col0: int = 0, lead: str = "") -> dict:
    shape = layout["shape"]
    kind = layout["kind"]
    notes = []
    if len(shape) == 1:
        cols = min(shape[0], WINDOW)
        rows = shape[0] // cols
        base, row_stride = 0, cols
        if rows > 1:
            notes.append(f"a 1-D tensor of {shape[0]} drawn in rows of {cols}")
    else:
        lead_idx = _lead_index(shape, lead)
        rows, cols = shape[-2], shape[-1]
        row_stride = cols
        base = 0
        for i, s in zip(lead_idx, shape):
            base = base * s + i
        base *= rows * cols
        if lead_idx:
            notes.append(f"the slice [{', '.join(map(str, lead_idx))}, :, :] of a rank-{len(shape)} tensor")
    row0 = max(0, min(row0, rows - 1)) // WINDOW * WINDOW
    col0 = max(0, min(col0, cols - 1)) // WINDOW * WINDOW
    nrows, ncols = min(WINDOW, rows - row0), min(WINDOW, cols - col0)
    if nrows < rows or ncols < cols:
        notes.append(f"folded: rows {row0}-{row0 + nrows - 1} of {rows}, columns {col0}-{col0 + ncols - 1} of {cols}")
    cells = []
    legend: list[dict] = []
    broadcast = 1
    if kind == "distributed":
        tpw, warps = layout["threads_per_warp"], layout["warps"]
        legend = [{"label": f"warp {w}", "colour": _colour(w, warps)} for w in range(warps)]
    elif kind == "shared":
        legend = [{"label": f"bank {b}", "colour": _colour(b, 32)} for b in range(32)]
    for r in range(nrows):
        for c in range(ncols):
            e = base + (row0 + r) * row_stride + col0 + c
            coord = _coord(shape, e)
            cell = {"r": r, "c": c, "coord": coord}
            if kind == "distributed":
                owners = layout["owners"][e]
                broadcast = max(broadcast, len(owners))
                t0, reg0 = owners[0][0], owners[0][1]
                cell.update(label=str(t0 % tpw), colour=_colour(t0 // tpw, warps), threads=" ".join(
                    str(o[0]) for o in owners), copies=len(owners), title="; ".join(
                    f"T{o[0]} (warp {o[0] // tpw}, lane {o[0] % tpw}) register {o[1]}"
                    + (f" block {o[2]}" if len(o) > 2 else "") for o in owners))
                cell["reg"] = reg0
            elif kind == "shared":
                off, bank = layout["offsets"][e], layout["banks"][e]
                cell.update(label=str(off), colour=_colour(bank, 32), threads=str(bank), copies=1,
                            title=f"offset {off}, bank {bank}")
            else:
                held = layout["cells"][e]
                cell.update(label=str(held[0][0]), colour=_colour(held[0][0] // 32, 4), threads=str(held[0][0]),
                            copies=len(held), title="; ".join(f"TMEM lane {h[0]}, column {h[1]}"
                                                            + (f", CTA {h[2]}" if len(h) > 2 else "") for h in held))
            cells.append(cell)
    if broadcast > 1:
        notes.append(f"broadcast: some elements are held by {broadcast} threads (all are listed on hover)")
    pages = {
        "up": row0 - WINDOW if row0 > 0 else None, "down": row0 + WINDOW if row0 + WINDOW < rows else None,
        "left": col0 - WINDOW if col0 > 0 else None, "right": col0 + WINDOW if col0 + WINDOW < cols else None,
    }
    return {"rows": nrows, "cols": ncols, "row0": row0, "col0": col0, "cells": cells, "legend": legend,
            "notes": notes, "pages": pages}


def _coord(shape: list[int], e: int) -> list[int]:
    out = []
    for s in reversed(shape):
        out.append(e % s)
        e //= s
    return out[::-1]
