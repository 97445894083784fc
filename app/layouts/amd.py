"""toLinearLayout for AMD matrix-core layouts: #ttg.amd_mfma, #ttg.amd_wmma and their dot
operands (LinearLayoutConversions.cpp, Triton 3.9)."""

from __future__ import annotations

from app.layouts.cga import cga_without_dim, check_shape, combine
from app.layouts.distributed import identity_nd, int_list, matrix_order
from app.layouts.errors import LayoutError
from app.layouts.linear import LinearLayout, out_names


def _mfma_tile(mdim: int, transposed: bool, bits: int | None) -> tuple[list, list]:
    """(register, lane) bases of one mfma output tile as (M, N) offsets."""
    if mdim == 32:
        regs, lanes = [(1, 0), (2, 0), (8, 0), (16, 0)], [(0, 1), (0, 2), (0, 4), (0, 8), (0, 16), (4, 0)]
    elif mdim == 16 and bits == 64:
        regs, lanes = [(4, 0), (8, 0)], [(0, 1), (0, 2), (0, 4), (0, 8), (1, 0), (2, 0)]
    elif mdim == 16:
        regs, lanes = [(1, 0), (2, 0)], [(0, 1), (0, 2), (0, 4), (0, 8), (4, 0), (8, 0)]
    else:
        raise LayoutError(f"amd_mfma with a {mdim}x{mdim} output tile is not drawn here")
    if transposed:
        regs, lanes = [(n, m) for m, n in regs], [(n, m) for m, n in lanes]
    return regs, lanes


def mfma(params: dict, shape: list[int]) -> LinearLayout:
    wpc = int_list(params, "warpsPerCTA")
    rank = len(wpc)
    check_shape(shape, rank, "the amd_mfma layout")
    instr = int_list(params, "instrShape")
    if instr[0] != instr[1]:
        raise LayoutError(f"amd_mfma instrShape {instr} is not drawn here")
    regs, lanes = _mfma_tile(instr[0], bool(params.get("isTransposed")), params.get("elementBitWidth"))
    names = out_names(rank)
    m, n = names[rank - 2], names[rank - 1]
    tile = LinearLayout({"register": [[b[1], b[0]] for b in regs], "lane": [[b[1], b[0]] for b in lanes]},
                        [(n, instr[0]), (m, instr[0])])
    order = matrix_order(rank)
    if rank == 3:
        tile = tile * LinearLayout.identity1d(1, "register", names[0]) * LinearLayout.identity1d(1, "lane", names[0])
    tiles = params.get("tilesPerWarp", [1] * rank)
    cta = tile * identity_nd("register", tiles, order).transpose_outs(tile.out_dim_names) \
        * identity_nd("warp", wpc, order).transpose_outs(tile.out_dim_names)
    return combine(cta, params, shape)


def mfma_dot(op_idx: int, kwidth: int, parent: dict, shape: list[int]) -> LinearLayout:
    raise LayoutError("dot_op of amd_mfma is not drawn yet")


def wmma(params: dict, shape: list[int]) -> LinearLayout:
    raise LayoutError("amd_wmma is not drawn yet")


def wmma_dot(op_idx: int, kwidth: int, parent: dict, shape: list[int]) -> LinearLayout:
    raise LayoutError("dot_op of amd_wmma is not drawn yet")


__all__ = ["cga_without_dim", "mfma", "mfma_dot", "wmma", "wmma_dot"]
