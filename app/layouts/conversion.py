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

from app.layouts.compose import DIMS, composed
from app.layouts.convert import to_linear_layout
from app.layouts.linear import LinearLayout
from app.layouts.parse import Encoding
from app.layouts.scratch import ldst_scratch_bytes, tiled_scratch_bytes


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


def _cta_split(ll: LinearLayout) -> int | None:
    """product(getCTASplitNum) of a layout: how many distinct tensor pieces its blocks hold. Known for
    block bases that each move along one dimension (every CGA layout); None otherwise."""
    moving = {tuple(v) for v in ll.in_bases("block") if any(v)}
    if any(sum(1 for x in v if x) != 1 for v in moving):
        return None
    return 1 << len(moving)


def _scratch(src: LinearLayout, dst: LinearLayout, bits: int, target: str) -> int | None:
    # Split over CTAs, Triton sizes the whole tensor's swizzled tile and divides it by the source's
    # CTA split (Allocation.cpp's getNumScratchElemsSwizzledCvt). A conversion that moves data between
    # CTAs (comp not trivial over block) reads the other CTA's shared memory, so no ldmatrix tile there.
    split = _cta_split(src)
    if split is None:
        return None
    cross_cta = "block" in minimal_dims(src, dst)
    backend, _, arch = target.partition(":")
    if backend == "hip":
        if cross_cta:  # Triton 3.9's AMD lowering fails on these (no compiled fixture to size them by)
            return None
        size = ldst_scratch_bytes(src, dst, bits)
    elif backend != "cuda" or not arch.isdigit():
        return None
    else:
        size = tiled_scratch_bytes(src, dst, bits, ldmatrix=int(arch) >= 75 and not cross_cta,
                                   stmatrix=int(arch) >= 90)
    return None if size is None else size // split


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
    ``scratch_bytes`` is null where no target is given (or for AMD, across CTAs);
    ``scratch_bytes_at_most`` always bounds it (the tensor once)."""
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
