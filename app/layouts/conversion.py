"""What a ttg.convert_layout from one layout to another becomes when lowered (Triton 3.9's
lib/Analysis/Utility.cpp: minimalCvtLayout, cvtReordersRegisters, cvtNeedsWarpShuffle,
cvtNeedsSharedMemory).

``comp = dst⁻¹ ∘ src`` maps each source hardware index (register, lane, warp, block) to the
destination index holding the same element. Quotienting it by block, then warp, then lane (each
only while that dimension maps to itself and to nothing else) leaves the smallest set of hardware
dimensions data must cross: nothing or registers only -> no data movement between threads; registers
and lanes -> warp shuffles; warps or blocks -> a round trip through shared memory.
"""

from __future__ import annotations

from app.layouts.convert import to_linear_layout
from app.layouts.errors import LayoutError
from app.layouts.linear import LinearLayout
from app.layouts.parse import Encoding
from app.layouts.scratch import ldst_scratch_bytes, tiled_scratch_bytes

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


def minimal_dims(src: LinearLayout, dst: LinearLayout) -> list[str]:
    """The hardware dims left after quotienting comp by block, warp, lane, register in turn."""
    comp = composed(src, dst)
    left = list(DIMS)
    for dim in reversed(DIMS):
        if len(src.in_bases(dim)) != len(dst.in_bases(dim)):
            break
        others = [d for d in left if d != dim]
        trivial = all(
            image[dim] == 1 << i and not any(image[o] for o in others)
            for i, image in enumerate(comp[dim])
        ) and not any(image[dim] for o in others for image in comp[o])
        if not trivial:
            break
        left.remove(dim)
    return left


def conversion_kind(src: LinearLayout, dst: LinearLayout) -> str:
    left = minimal_dims(src, dst)
    if not left:
        return "none"
    if left == ["register"]:
        return "registers"
    if left == ["register", "lane"] and _mixed_transpositions(src, dst) == 1:
        return "shuffles"
    return "shared"


def _scratch(src: LinearLayout, dst: LinearLayout, bits: int, target: str) -> int | None:
    backend, _, arch = target.partition(":")
    if backend == "hip":
        return ldst_scratch_bytes(src, dst, bits)
    if backend != "cuda" or not arch.isdigit():
        return None
    if any(not any(v) for ll in (src, dst) for dim in ("lane", "warp") for v in ll.in_bases(dim)):
        return None  # broadcast lanes/warps: Triton's sizing differs there (18 of 120 fixtures)
    return tiled_scratch_bytes(src, dst, bits, ldmatrix=int(arch) >= 75, stmatrix=int(arch) >= 90)


def _mixed_transpositions(src: LinearLayout, dst: LinearLayout) -> int:
    """How many register bits must trade places with lane bits. Triton 3.9 lowers a conversion inside
    a warp with shuffles only when exactly one such swap is needed; otherwise (several swaps, or none:
    lanes only permuted or broadcast) it goes through shared memory. Read off its own lowering on the
    committed fixtures (tests/fixtures/layouts/triton39_convert_layout.json.gz), not its source."""
    return sum(1 for image in composed(src, dst)["register"] if image["lane"])


def conversion(src: Encoding | str | LinearLayout, dst: Encoding | str | LinearLayout, shape: list[int], dtype_bits: int,
               target: str = "") -> dict:
    """{"kind", "scratch_bytes", ...}. A trip through shared memory is sized as Triton's swizzling does
    (app/layouts/scratch.py): plain loads/stores on AMD, ldmatrix/stmatrix tiles too on NVIDIA.
    ``scratch_bytes`` is null where that is not reproduced exactly (no target given, or NVIDIA with
    lanes or warps that broadcast); ``scratch_bytes_at_most`` always bounds it (the tensor once)."""
    # a caller converting many pairs may pass layouts it already built (app/layouts/cvt_costs.py)
    s = src if isinstance(src, LinearLayout) else to_linear_layout(src, shape)
    d = dst if isinstance(dst, LinearLayout) else to_linear_layout(dst, shape)
    kind = conversion_kind(s, d)
    out: dict = {"kind": kind, "crosses": minimal_dims(s, d)}
    if kind == "shared":
        elements = 1
        for n in shape:
            elements *= n
        out["scratch_bytes"] = _scratch(s, d, dtype_bits, target)
        out["scratch_bytes_at_most"] = elements * max(dtype_bits, 8) // 8
    else:
        out["scratch_bytes"] = 0
    return out
