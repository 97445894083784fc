"""toLinearLayout for NVIDIA tensor-core layouts: #ttg.nvidia_mma v2 (Ampere) and v3 (Hopper wgmma),
and the dot operands taken from them (LinearLayoutConversions.cpp, Triton 3.9)."""

from __future__ import annotations

from app.layouts.cga import cga_without_dim, check_shape, combine
from app.layouts.distributed import broadcasted_dot_operand, identity_nd, int_list, matrix_order
from app.layouts.errors import LayoutError
from app.layouts.linear import LinearLayout, out_names


def _version(params: dict) -> int:
    major = params.get("versionMajor")
    if major not in (2, 3):
        raise LayoutError(f"nvidia_mma versionMajor {major} is not drawn here (only 2 and 3)")
    return major


def mma_tile(tile: list[int], kwidth: int, order: list[int], rep_order: list[int]) -> LinearLayout:
    """nvidiaMmaTile: kWidth registers and 4 lanes along the inner dim, 8 lanes along the outer,
    then the tile's repeats (outer first)."""
    rank = len(rep_order)
    names = out_names(rank)
    inner, outer = order[0], order[1]
    m, n = tile[outer], tile[inner]
    if m % 8 or n % (kwidth * 4):
        raise LayoutError(f"mma tile {tile} does not fit kWidth {kwidth}")
    ll = identity_nd("register", [1] * rank, rep_order)
    for size, in_dim, d in ((kwidth, "register", inner), (4, "lane", inner), (8, "lane", outer),
                            (m // 8, "register", outer), (n // (kwidth * 4), "register", inner)):
        ll = ll * LinearLayout.identity1d(size, in_dim, names[d])
    return ll


def nvidia_mma(params: dict, shape: list[int]) -> LinearLayout:
    version = _version(params)
    wpc = int_list(params, "warpsPerCTA")
    rank = len(wpc)
    check_shape(shape, rank, "the nvidia_mma layout")
    instr = int_list(params, "instrShape")
    tile = list(instr) if version == 2 else [instr[0], instr[1]]
    if version == 2 and len(tile) != rank:
        tile = [1] * (rank - len(tile)) + tile
    if version == 3 and rank != 2:
        raise LayoutError("nvidia_mma v3 is rank 2")
    order = matrix_order(rank)
    cta = mma_tile(tile, 2, order, matrix_order(rank))
    warps = identity_nd("warp", wpc, matrix_order(rank, row_major=version != 3))
    cta = cta * warps.transpose_outs(cta.out_dim_names)
    return combine(cta, params, shape)


def dot_operand_order(op_idx: int, rank: int) -> list[int]:
    """getOrderForDotOperand(kContig=true): K fastest, then the other matrix dim, then batch."""
    kdim = rank - 1 if op_idx == 0 else rank - 2
    other = rank - 2 if op_idx == 0 else rank - 1
    return [kdim, other] + list(range(rank - 3, -1, -1))


def nvidia_dot(op_idx: int, kwidth: int, parent: dict, shape: list[int]) -> LinearLayout:
    version = _version(parent)
    wpc = int_list(parent, "warpsPerCTA")
    rank = len(wpc)
    check_shape(shape, rank, "the dot operand")
    if version == 3 and op_idx != 0:
        raise LayoutError("a Hopper wgmma takes operand B from shared memory, never as a dot_op in registers")
    if kwidth <= 0:
        raise LayoutError("dot_op of an nvidia_mma parent needs kWidth")
    tile = [1] * rank
    if op_idx == 0:
        tile[rank - 2], tile[rank - 1] = 16, kwidth * 8
    else:
        tile[rank - 2], tile[rank - 1] = kwidth * 8, 8
    order = dot_operand_order(op_idx, rank)
    cta = mma_tile(tile, kwidth, order, order)
    kdim = rank - 1 if op_idx == 0 else rank - 2
    warps = broadcasted_dot_operand(wpc, matrix_order(rank, row_major=version != 3), kdim, "warp")
    cta = cta * warps.transpose_outs(cta.out_dim_names)
    return combine(cta, cga_without_dim(parent, rank, kdim), shape)
