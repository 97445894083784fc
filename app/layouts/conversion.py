"""What a ttg.convert_layout from one layout to another becomes when lowered (Triton 3.9's
lib/Analysis/Utility.cpp: minimalCvtLayout, cvtReordersRegisters, cvtNeedsWarpShuffle,
cvtNeedsSharedMemory, getWarpLayoutConvertDecomposition).

``comp = dst⁻¹ ∘ src`` maps each source hardware index (register, lane, warp, block) to the
destination index holding the same element. Quotienting it by block, then warp, then lane (each
only while that dimension maps to itself and to nothing else) leaves the smallest set of hardware
dimensions data must cross: nothing or registers only -> no data movement between threads.

Whether the rest takes warp shuffles or shared memory is Triton's cvtNeedsWarpShuffle, the same on
every target (compiled for cuda:80, cuda:90, hip:gfx942 and hip:gfx950: tests/layout_cases/):
each warp must find what it needs in its own warp of the source, and the move must be one permutation
of register and lane bits with at most one register trading places with a lane (see
``warp_local`` and ``register_lane_swaps``). Everything else goes through shared memory. The
target only changes how the scratch is sized (and which instructions shuffle: shfl.sync on NVIDIA,
ds_bpermute or gfx950's permlane swaps on AMD).
"""

from __future__ import annotations

from app.layouts.compose import DIMS, composed
from app.layouts.convert import to_linear_layout
from app.layouts.elements import element_bits
from app.layouts.errors import LayoutError
from app.layouts.linear import LinearLayout
from app.layouts.parse import Encoding
from app.layouts.scratch import ldst_scratch_bytes, tiled_swizzle


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


def conversion_kind(src: LinearLayout, dst: LinearLayout, force_warp_shuffle: bool = False) -> str:
    """"none", "registers", "shuffles" or "shared", as Triton 3.9 lowers the conversion.
    ``force_warp_shuffle``: the op carries Triton's ``{force_warp_shuffle}`` attribute."""
    left = minimal_dims(src, dst)
    if not left:
        return "none"
    if left == ["register"]:
        return "registers"
    if force_warp_shuffle:
        return "shuffles"
    if ("warp" in left or "block" in left) and not warp_local(src, dst):
        return "shared"
    return "shuffles" if register_lane_swaps(src, dst) < 2 else "shared"


def _flat_columns(ll: LinearLayout, dim: str) -> list[int]:
    """Each basis of an input dim as one bit vector over the tensor's elements."""
    out = []
    for basis in ll.in_bases(dim):
        idx = 0
        for (_, size), v in zip(ll.outs, basis):
            idx = idx * size + v
        out.append(idx)
    return out


def _reduce(vector: int, pivots: list[int]) -> int:
    for p in pivots:
        vector = min(vector, vector ^ p)
    return vector


def _span(vectors: list[int]) -> list[int]:
    """An echelon basis of their span over GF(2) (largest leading bit first)."""
    pivots: list[int] = []
    for v in vectors:
        v = _reduce(v, pivots)
        if v:
            pivots.append(v)
            pivots.sort(reverse=True)
    return pivots


def warp_local(src: LinearLayout, dst: LinearLayout) -> bool:
    """Can every warp (and CTA) of the destination take what it holds from the same warp of the
    source, with the source register independent of the warp? Then shuffles can do it even where the
    warps are not a plain identity: a source that holds copies in every warp lets each destination
    warp pick its part with a source lane that depends on the warp (Triton 3.9's warp-dependent lane
    selection; "source registers must not depend on warp/CTA coordinates", Utility.h)."""
    if len(src.in_bases("warp")) != len(dst.in_bases("warp")) or \
            len(src.in_bases("block")) != len(dst.in_bases("block")):
        return False
    lanes = _span(_flat_columns(src, "lane"))
    within = _span(_flat_columns(src, "register") + _flat_columns(src, "lane"))
    # warp 0 of the destination holds only elements that warp 0 of the source holds ...
    if any(_reduce(v, within) for v in _flat_columns(dst, "register") + _flat_columns(dst, "lane")):
        return False
    # ... and every other warp (CTA) finds its part at a lane offset of its own copy
    return not any(_reduce(a ^ b, lanes) for dim in ("warp", "block")
                   for a, b in zip(_flat_columns(src, dim), _flat_columns(dst, dim)))


def register_lane_swaps(src: LinearLayout, dst: LinearLayout) -> int:
    """How many register bits must trade places with lane bits: getWarpLayoutConvertDecomposition's
    mixed transpositions. Broadcast registers dropped, the conversion within a warp is a permutation
    of register and lane bits (padded with the broadcast ones); each transposition moves one source
    register bit into a destination lane and one source lane bit into a destination register, so the
    count is the larger of the two one-sided counts. Triton lowers with shuffles when it is below 2
    (0: the lanes are only reordered; 1: one swap), otherwise through shared memory."""
    src_reg = set(_flat_columns(src, "register")) - {0}
    src_lane = set(_flat_columns(src, "lane")) - {0}
    dst_reg = set(_flat_columns(dst, "register")) - {0}
    dst_lane = set(_flat_columns(dst, "lane")) - {0}
    return max(len(src_reg & dst_lane), len(dst_reg & src_lane))


def _cta_split(ll: LinearLayout) -> int | None:
    """product(getCTASplitNum) of a layout: how many distinct tensor pieces its blocks hold. Known for
    block bases that each move along one dimension (every CGA layout); None otherwise."""
    moving = {tuple(v) for v in ll.in_bases("block") if any(v)}
    if any(sum(1 for x in v if x) != 1 for v in moving):
        return None
    return 1 << len(moving)


def _swizzle(src: LinearLayout, dst: LinearLayout, bits: int, target: str) -> tuple[int | None, int | None, int | None]:
    """(scratch bytes, read conflicts, write conflicts) of the swizzled scratch; conflicts only on
    NVIDIA targets (the tile optimalSwizzling picks), nulls where unknown."""
    # Split over CTAs, Triton sizes the whole tensor's swizzled tile and divides it by the source's
    # CTA split (Allocation.cpp's getNumScratchElemsSwizzledCvt). A conversion that moves data between
    # CTAs (comp not trivial over block) reads the other CTA's shared memory, so no ldmatrix tile there.
    split = _cta_split(src)
    if split is None:
        return None, None, None
    cross_cta = "block" in minimal_dims(src, dst)
    backend, _, arch = target.partition(":")
    if backend == "hip":
        if cross_cta:  # Triton 3.9's AMD lowering fails on these (no compiled fixture to size them by)
            return None, None, None
        size, read, write = ldst_scratch_bytes(src, dst, bits), None, None
    elif backend != "cuda" or not (arch.isascii() and arch.isdigit() and len(arch) <= 4):
        return None, None, None
    else:
        found = tiled_swizzle(src, dst, bits, ldmatrix=int(arch) >= 75 and not cross_cta,
                              stmatrix=int(arch) >= 90)
        size, read, write = found if found is not None else (None, None, None)
    return (None if size is None else size // split), read, write


def conversion(src: Encoding | str | LinearLayout, dst: Encoding | str | LinearLayout, shape: list[int],
               element_type: str | int, target: str = "", force_warp_shuffle: bool = False) -> dict:
    """{"kind", "crosses", "element_type", "element_bits", "scratch_bytes", ...} of converting a
    tensor of ``shape`` and ``element_type`` from ``src`` to ``dst`` on ``target`` ("cuda:90",
    "hip:gfx950", ...; the module's ttg.target).

    ``element_type`` is the tensor's element type as written in the IR (``f16``, ``i1``,
    ``!tt.ptr<f16>``: pointers take 64 bits, i1 is stored as i8); it is required, never guessed
    (LayoutError when missing or unknown). An int is taken as the element's bit width (the old form
    of this argument; pass the type). A trip through shared memory is sized as Triton's swizzling does
    (app/layouts/scratch.py): plain loads/stores on AMD, ldmatrix/stmatrix tiles too on NVIDIA.
    ``scratch_bytes`` is null where no target is given (or for AMD, across CTAs);
    ``scratch_bytes_at_most`` always bounds it (the tensor once)."""
    if isinstance(element_type, bool) or not isinstance(element_type, (str, int)):
        raise LayoutError("the element type is required (as written in the IR: f16, i1, !tt.ptr<f16>, ...)")
    if isinstance(element_type, int):
        if element_type <= 0:
            raise LayoutError(f"an element of {element_type} bits")
        bits, label = max(element_type, 8), None
    else:
        bits, label = element_bits(element_type), element_type.strip()
    # a caller converting many pairs may pass layouts it already built (app/layouts/cvt_costs.py)
    s = src if isinstance(src, LinearLayout) else to_linear_layout(src, shape)
    d = dst if isinstance(dst, LinearLayout) else to_linear_layout(dst, shape)
    kind = conversion_kind(s, d, force_warp_shuffle)
    out: dict = {"kind": kind, "crosses": minimal_dims(s, d), "element_type": label, "element_bits": bits}
    if kind == "shared":
        elements = 1
        for n in shape:
            elements *= n
        out["scratch_bytes"], read, write = _swizzle(s, d, bits, target)
        out["scratch_bytes_at_most"] = elements * bits // 8
        if read is not None:  # the swizzled scratch's own conflicts (a model: Gluon exposes no count)
            out["bank_conflicts"] = {"read": read, "write": write}
    else:
        out["scratch_bytes"] = 0
    return out
