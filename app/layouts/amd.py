"""toLinearLayout for AMD matrix-core layouts: #ttg.amd_mfma, #ttg.amd_wmma and their dot
operands (LinearLayoutConversions.cpp, Triton 3.9)."""

from __future__ import annotations

from app.layouts.cga import cga_without_dim, check_shape, combine, shape_per_cta
from app.layouts.distributed import broadcasted_dot_operand, int_list, matrix_order
from app.layouts.errors import LayoutError
from app.layouts.linear import LinearLayout, log2, out_names


def _mfma_tile(mdim: int, ndim: int, transposed: bool, bits: int | None) -> tuple[list, list]:
    """(register, lane) bases of one mfma output tile as (M, N) offsets."""
    if (mdim, ndim) == (64, 4):
        if not transposed:
            raise LayoutError("a 64x4 amd_mfma must be transposed (Triton asserts so)")
        return [(0, 1), (0, 2)], [(1, 0), (2, 0), (4, 0), (8, 0), (16, 0), (32, 0)]
    if (mdim, ndim) == (4, 64):
        if transposed:
            return [(0, 1), (0, 2)], [(1, 0), (2, 0), (0, 4), (0, 8), (0, 16), (0, 32)]
        return [(1, 0), (2, 0)], [(0, 1), (0, 2), (0, 4), (0, 8), (0, 16), (0, 32)]
    if mdim != ndim:
        raise LayoutError(f"amd_mfma with a {mdim}x{ndim} output tile is not drawn here")
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
    """One mfma output tile per warp, ``tilesPerWarp`` tiles side by side, warps, then repeats;
    the register bases go dim by dim (N, then M): a dim's tiles, then that dim's repeats."""
    wpc = int_list(params, "warpsPerCTA")
    rank = len(wpc)
    check_shape(shape, rank, "the amd_mfma layout")
    instr = int_list(params, "instrShape")
    if len(instr) < 2:
        raise LayoutError(f"amd_mfma instrShape {instr} needs M and N")
    mdim, ndim = instr[0], instr[1]
    regs, lanes = _mfma_tile(mdim, ndim, bool(params.get("isTransposed")), params.get("elementBitWidth"))
    tiles = params.get("tilesPerWarp", [1] * rank)
    if len(tiles) != rank:
        raise LayoutError("tilesPerWarp does not match the rank")

    def vec(d: int, value: int) -> list[int]:
        return [value if i == d else 0 for i in range(rank)]

    m, n = rank - 2, rank - 1
    tile_size = [1] * rank
    tile_size[m], tile_size[n] = mdim, ndim
    reg_bases = [vec(m, a) if a else vec(n, b) for a, b in regs]
    lane_bases = [vec(m, a) if a else vec(n, b) for a, b in lanes]
    cta_shape = shape_per_cta(params, shape)
    order = matrix_order(rank)
    warp_bases: list[list[int]] = []
    sizes = [0] * rank
    for d in order:
        tiled = tile_size[d] * tiles[d]
        warp_bases += [vec(d, tiled << i) for i in range(log2(wpc[d]))]
    for d in order:
        reg_bases += [vec(d, tile_size[d] << i) for i in range(log2(tiles[d]))]
        covered = tile_size[d] * tiles[d] * wpc[d]
        reg_bases += [vec(d, covered << i) for i in range(log2(max(1, cta_shape[d] // covered)))]
        sizes[d] = max(covered, cta_shape[d])
    names = out_names(rank)
    cta = LinearLayout({"register": reg_bases, "lane": lane_bases, "warp": warp_bases},
                       [(names[d], sizes[d]) for d in range(rank)]).transpose_outs([names[d] for d in order])
    return combine(cta, params, shape)


def mfma_dot(op_idx: int, kwidth: int, parent: dict, shape: list[int]) -> LinearLayout:
    """mfmaDotToLinearLayout: kWidth consecutive K elements per lane, the mfma's M (or N) rows over
    the first lanes, the remaining lanes further along K; warps broadcast along K."""
    wpc = int_list(parent, "warpsPerCTA")
    rank = len(wpc)
    check_shape(shape, rank, "the dot operand")
    mdim = int_list(parent, "instrShape")[0]
    if mdim not in (16, 32):
        raise LayoutError(f"dot_op of a {mdim}-row amd_mfma is not drawn here")
    if kwidth <= 0:
        raise LayoutError("dot_op of amd_mfma needs kWidth")
    return _amd_dot(op_idx, shape, rank, wpc, parent, kwidth, mdim, 64 // mdim, None)


def _amd_dot(op_idx, shape, rank, wpc, parent, k_regs, rows, k_lanes, warp_bases, zero_lanes=0):
    """The shared shape of AMD dot operands: `k_regs` consecutive K elements in registers, `rows`
    lanes along the non-K dim, `k_lanes` lanes further along K (`zero_lanes` lane bits that
    broadcast), warps broadcast along K."""
    names = out_names(rank)
    kdim = rank - 1 if op_idx == 0 else rank - 2
    other = rank - 2 if op_idx == 0 else rank - 1
    k, o = names[kdim], names[other]
    tile = LinearLayout.identity1d(k_regs, "register", k) * LinearLayout.identity1d(rows, "lane", o) \
        * LinearLayout.identity1d(k_lanes, "lane", k) * LinearLayout.zeros1d(1 << zero_lanes, "lane", k)
    tile = tile.transpose_outs([k, o])
    for d in range(rank - 3, -1, -1):
        tile = tile * LinearLayout.identity1d(1, "register", names[d])
    if warp_bases is None:
        warps = broadcasted_dot_operand(wpc, matrix_order(rank), kdim, "warp")
    else:
        proj = [[0 if i == kdim else v for i, v in enumerate(b)] for b in warp_bases]
        warps = LinearLayout.from_bases({"warp": proj}, names)
    cta = tile * warps.transpose_outs([n for n in tile.out_dim_names if n in warps.out_dim_names])
    return combine(cta, cga_without_dim(parent, rank, kdim), shape)


_WMMA_TILES = {  # (register, lane) bases of a 16x16 wmma result as (M, N) offsets
    1: ([(2, 0), (4, 0), (8, 0)], [(0, 1), (0, 2), (0, 4), (0, 8), (1, 0)]),
    2: ([(1, 0), (2, 0), (4, 0)], [(0, 1), (0, 2), (0, 4), (0, 8), (8, 0)]),
}


_WMMA_SHAPES = {1: [[16, 16, 16]], 2: [[16, 16, 16], [16, 16, 32]],
                3: [[16, 16, 4], [16, 16, 32], [16, 16, 64], [16, 16, 128]]}


def _wmma_parts(params: dict) -> tuple[int, list, list, int]:
    version = params.get("version")
    if version not in (1, 2, 3):
        raise LayoutError(f"amd_wmma version {version} is not drawn here")
    cta = params.get("ctaLayout", {})
    if not isinstance(cta, dict) or "warp" not in cta:
        raise LayoutError("amd_wmma needs ctaLayout = {warp = [...]}")
    warp = cta["warp"]
    regs = cta.get("register", [])
    rank = len(warp[0]) if warp else len(regs[0]) if regs else 2
    for b in list(warp) + list(regs):
        if not isinstance(b, list) or len(b) != rank:
            raise LayoutError("amd_wmma ctaLayout bases disagree on the rank")
    instr = params.get("instrShape", [16, 16, 16])
    if not isinstance(instr, list) or [*instr] not in _WMMA_SHAPES[version]:
        # Triton 3.9's verifier: every wmma result tile is 16x16; only K varies by version.
        raise LayoutError(f"invalid WMMA v{version} instruction shape {instr} (Triton 3.9 accepts "
                          f"{', '.join(map(str, _WMMA_SHAPES[version]))})")
    return version, warp, regs, rank


def wmma(params: dict, shape: list[int]) -> LinearLayout:
    version, warp, regs, rank = _wmma_parts(params)
    check_shape(shape, rank, "the amd_wmma layout")
    treg, tlane = _WMMA_TILES[min(version, 2)]
    if params.get("isTranspose"):
        treg, tlane = [(n, m) for m, n in treg], [(n, m) for m, n in tlane]
    names = out_names(rank)
    m, n = names[rank - 2], names[rank - 1]
    tile = LinearLayout({"register": [[b[1], b[0]] for b in treg], "lane": [[b[1], b[0]] for b in tlane]},
                        [(n, 16), (m, 16)])
    for d in range(rank - 3, -1, -1):
        tile = tile * LinearLayout.identity1d(1, "register", names[d]) * LinearLayout.identity1d(1, "lane", names[d])
    cta = tile
    if regs:
        cta = cta * LinearLayout.from_bases({"register": regs}, names).transpose_outs(tile.out_dim_names)
    cta = cta * LinearLayout.from_bases({"warp": warp}, names).transpose_outs(tile.out_dim_names)
    return combine(cta, params, shape)


def wmma_dot(op_idx: int, kwidth: int, parent: dict, shape: list[int]) -> LinearLayout:
    """wmmaDotOperandToLinearLayout: wmma v1 holds 16 K elements per lane and the upper half-warp
    repeats the lower; v2 and v3 hold kWidth K elements and the upper half-warp the next kWidth."""
    version, warp, _regs, rank = _wmma_parts(parent)
    check_shape(shape, rank, "the dot operand")
    if kwidth <= 0:
        raise LayoutError("dot_op of amd_wmma needs kWidth")
    # Warp bases count whole 16x16 tiles; operator* scales them by the tile.
    if version == 1:
        return _amd_dot(op_idx, shape, rank, None, parent, 16, 16, 1, warp, zero_lanes=1)
    return _amd_dot(op_idx, shape, rank, None, parent, kwidth, 16, 2, warp)
