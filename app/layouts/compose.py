"""The pseudo-inverse at the heart of a layout conversion: where each hardware bit of one layout lands
in another's (Triton's invertAndCompose). Shared by the conversion kinds (conversion.py) and the
scratch-size model (scratch.py)."""

from __future__ import annotations

from app.layouts.errors import LayoutError
from app.layouts.linear import LinearLayout

DIMS = ("register", "lane", "warp", "block")


def _flat(ll: LinearLayout, basis: list[int]) -> int:
    idx = 0
    for (_, size), v in zip(ll.outs, basis):
        idx = idx * size + v
    return idx


def _columns(ll: LinearLayout) -> list[tuple[str, int, int]]:
    """(in dim, bit, element index as a bit vector) for every hardware bit, register bits first."""
    return [(d, i, _flat(ll, b)) for d in DIMS for i, b in enumerate(ll.in_bases(d))]


def _solver(columns: list[int]):
    """Gaussian elimination over GF(2): express a target vector in the given columns, free
    columns (broadcast bits) at zero, like Triton's pseudo-inverse."""
    pivots: list[tuple[int, int]] = []  # (reduced vector, combination of columns as a bit mask)
    for j, col in enumerate(columns):
        vec, combo = col, 1 << j
        for pv, pc in pivots:
            if vec ^ pv < vec:
                vec, combo = vec ^ pv, combo ^ pc
        if vec:
            pivots.append((vec, combo))
            pivots.sort(key=lambda p: -p[0])

    def solve(target: int) -> int | None:
        combo = 0
        for pv, pc in pivots:
            if target ^ pv < target:
                target, combo = target ^ pv, combo ^ pc
        return None if target else combo

    return solve


def composed(src: LinearLayout, dst: LinearLayout) -> dict[str, list[dict[str, int]]]:
    """dst.invertAndCompose(src): per source hardware bit, the destination index (per dim) it maps to."""
    if [s for _, s in src.outs] != [s for _, s in dst.outs]:
        raise LayoutError("the two layouts cover different shapes")
    dcols = _columns(dst)
    solve = _solver([c for _, _, c in dcols])
    out: dict[str, list[dict[str, int]]] = {d: [] for d in DIMS}
    free = {(dd, bit) for dd, bit, c in dcols if c == 0}
    for d, i, col in _columns(src):
        if col == 0 and (d, i) in free:
            # A broadcast bit in both layouts maps to itself (so it can be quotiented away).
            out[d].append({dd: (1 << i if dd == d else 0) for dd in DIMS})
            continue
        combo = solve(col)
        if combo is None:
            raise LayoutError("the destination layout does not hold every element of the source")
        image = dict.fromkeys(DIMS, 0)
        for j, (dd, bit, _) in enumerate(dcols):
            if combo >> j & 1:
                image[dd] |= 1 << bit
        out[d].append(image)
    return out
