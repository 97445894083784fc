"""toLinearLayout for shared-memory encodings: offset (and block) -> tensor coordinate.

swizzled_shared, nvmma_shared (TMA/wgmma swizzle), shared_linear, padded_shared (linear part
plus padding), and Triton 3.1's ``#triton_gpu.shared`` (LinearLayoutConversions.cpp, Triton 3.9).
"""

from __future__ import annotations

from app.layouts.cga import cga_layout, check_shape, combine, shape_per_cta
from app.layouts.distributed import int_list, linear_bases
from app.layouts.errors import LayoutError
from app.layouts.linear import LinearLayout, log2, out_names


def _order(params: dict) -> list[int]:
    order = int_list(params, "order")
    if sorted(order) != list(range(len(order))):
        raise LayoutError(f"order {order} is not a permutation")
    return order


def swizzled(params: dict, shape: list[int], rotating: bool = False) -> LinearLayout:
    """swizzledSharedToLinearLayout; with ``rotating``, sharedToLinearLayoutAMDRotating: the phase is
    XORed with the block of maxPhase x perPhase rows it lies in, and the swizzled dims span the
    whole shape, not one CTA's share (as Triton 3.9 does)."""
    order = _order(params)
    rank = len(order)
    check_shape(shape, rank, "the swizzled_shared layout")
    names = out_names(rank)
    per_cta = shape_per_cta(params, shape)
    if rank == 1:
        return combine(LinearLayout.identity1d(per_cta[0], "offset", names[0]), params, shape)
    col, row = order[0], order[1]
    span = shape if rotating else per_cta
    ncols, nrows = span[col], span[row]
    vec, per_phase, max_phase = (params.get(k) for k in ("vec", "perPhase", "maxPhase"))
    if not all(isinstance(v, int) and v > 0 for v in (vec, per_phase, max_phase)):
        raise LayoutError("swizzled_shared needs positive vec, perPhase and maxPhase")
    bases = [[0, 1 << i] for i in range(log2(ncols))]
    for i in range(log2(nrows)):
        r = 1 << i
        phase = (r // per_phase) % max_phase
        if rotating:
            phase ^= r // max_phase // per_phase % max_phase
        bases.append([r, (vec * phase) % ncols])
    ll = LinearLayout({"offset": bases}, [(names[row], nrows), (names[col], ncols)])
    for d in order[2:]:
        ll = ll * LinearLayout.identity1d(span[d], "offset", names[d])
    return combine(ll, params, shape)


def legacy_shared(params: dict, shape: list[int]) -> LinearLayout:
    """Triton 3.1's #triton_gpu.shared: with hasLeadingOffset it is the wgmma/TMA swizzle
    (nvmma_shared), otherwise a plain swizzle."""
    if not params.get("hasLeadingOffset"):
        return swizzled(params, shape)
    swizzle = {(4, 2): 32, (2, 4): 64, (1, 8): 128}.get((params.get("perPhase"), params.get("maxPhase")))
    vec = params.get("vec")
    if swizzle is None or not isinstance(vec, int) or vec <= 0 or 128 % vec:
        raise LayoutError("hasLeadingOffset needs (perPhase, maxPhase) of (4,2), (2,4) or (1,8)")
    order = _order(params)
    nv = dict(params, swizzlingByteWidth=swizzle, elementBitWidth=128 // vec, transposed=order[0] != len(order) - 1)
    return nvmma(nv, shape)


def nvmma(params: dict, shape: list[int]) -> LinearLayout:
    """nvmmaSharedToLinearLayout: 8-row swizzle tiles of swizzle-width bytes, rows (up to a TMA box of
    256) before the next column tile; ``transposed`` makes dim r-2 the contiguous one."""
    swizzle, bits = params.get("swizzlingByteWidth", 0), params.get("elementBitWidth", 16)
    transposed, fp4 = bool(params.get("transposed", False)), bool(params.get("fp4Padded", False))
    if swizzle not in (0, 32, 64, 128) or bits not in (8, 16, 32, 64):
        raise LayoutError(f"nvmma_shared swizzle {swizzle} / element width {bits} not supported")
    if fp4 and (swizzle != 128 or bits != 8):
        raise LayoutError("fp4Padded nvmma_shared needs a 128-byte swizzle and 8-bit elements")
    rank = params.get("rank", 2)  # Triton 3.9 prints rank only when it is not 2
    if params.get("CGALayout"):
        rank = len(params["CGALayout"][0])
    check_shape(shape, rank, "the nvmma_shared layout")
    if rank < 2:
        raise LayoutError("nvmma_shared needs rank 2 or more")
    names = out_names(rank)
    per_cta = shape_per_cta(params, shape)
    tile_cols = swizzle * 8 // bits if swizzle else None
    # fp4Padded: each 16-byte group of the tile holds 8 packed bytes and 8 of padding, so the TMA box
    # holds half the tile's columns and the padding offsets repeat the real ones.
    packing = 2 if fp4 else 1
    # The TMA box: contiguous dim clipped to the swizzle width, others to 256.
    contig = rank - 2 if transposed else rank - 1
    tma = [min(s, 256) for s in per_cta]
    if tile_cols:
        tma[contig] = min(per_cta[contig], tile_cols // packing)
    if transposed:
        other = rank - 1
        outer = [d for d in range(rank) if d not in (contig, other)]
    else:
        other = rank - 2
        outer = [d for d in range(rank) if d not in (contig, other)]
    # The strided axis: dim `other` fastest, then the outer dims from the innermost.
    strided = [other] + sorted(outer, reverse=True)
    nstrided = 1
    for d in strided:
        nstrided *= tma[d]
    bases: list[list[int]] = []

    def vec_at(axis_dims: list[int], value: int) -> list[int]:
        """A position along a flattened group of dims (first fastest) as a coordinate vector."""
        v = [0] * rank
        for d in axis_dims:
            bits_d = log2(tma[d])
            v[d] = value & ((1 << bits_d) - 1)
            value >>= bits_d
        return v

    def add(a: list[int], b: list[int]) -> list[int]:
        return [x + y for x, y in zip(a, b)]

    def packed(col: int) -> int:
        return col // 16 * 8 + col % 8 if fp4 else col

    ncontig = tma[contig]
    if tile_cols:
        if ncontig * packing < tile_cols or nstrided < 8:
            raise LayoutError(f"nvmma_shared with {swizzle}-byte swizzle needs at least "
                              f"8 x {tile_cols // packing} elements")
        vec = 128 // bits
        per_phase = 128 // swizzle
        max_phase = swizzle // 16
        for i in range(log2(tile_cols)):
            bases.append(vec_at([contig], packed(1 << i)))
        for i in range(3):
            r = 1 << i
            bases.append(add(vec_at(strided, r), vec_at([contig], packed(vec * ((r // per_phase) % max_phase)))))
        for i in range(3, log2(nstrided)):
            bases.append(vec_at(strided, 1 << i))
    else:
        for i in range(log2(ncontig)):
            bases.append(vec_at([contig], 1 << i))
        for i in range(log2(nstrided)):
            bases.append(vec_at(strided, 1 << i))
    ll = LinearLayout({"offset": bases}, [(n, tma[i]) for i, n in enumerate(names)])
    for d in range(rank):  # whatever the TMA box left out repeats last
        if per_cta[d] > tma[d]:
            extra = LinearLayout({"offset": [[(1 << i) * tma[d] if j == d else 0 for j in range(rank)]
                                             for i in range(log2(per_cta[d] // tma[d]))]},
                                 [(n, per_cta[d] // tma[d] if j == d else 1) for j, n in enumerate(names)])
            ll = LinearLayout({"offset": ll.bases["offset"] + extra.bases["offset"]},
                              [(n, per_cta[j] if j == d else ll.out_size(n)) for j, n in enumerate(names)])
    return combine(ll, params, shape)


def shared_linear(params: dict, shape: list[int]) -> LinearLayout:
    bases, rank = linear_bases(params, ("offset", "block"))
    check_shape(shape, rank, "the shared_linear layout")
    ll = LinearLayout.from_bases(bases, out_names(rank))
    for i, n in enumerate(out_names(rank)):
        if ll.out_size(n) > shape[i]:
            raise LayoutError(f"shared_linear covers {ll.out_size(n)} along dim{i}, more than the shape")
    return ll


def padded_parts(params: dict) -> tuple[list[list[int]], LinearLayout]:
    """(interval/padding pairs, linear component) of #ttg.padded_shared, at the layout's own shape."""
    pairs = params.get("intervalPadding")
    if not pairs:
        raise LayoutError("padded_shared needs [interval:+padding] pairs")
    for interval, pad in pairs:
        log2(interval)
        log2(pad)
    if "offset" in params:
        bases, rank = linear_bases(params, ("offset", "block"))
        return pairs, LinearLayout.from_bases(bases, out_names(rank))
    order, lshape = _order(params), int_list(params, "shape")
    rank = len(order)
    check_shape(lshape, rank, "the padded_shared layout")
    per_cta = shape_per_cta(params, lshape)
    names = out_names(rank)
    bases = []
    for d in order:
        for i in range(log2(per_cta[d])):
            bases.append([1 << i if j == d else 0 for j in range(rank)])
    cga = cga_layout(params, rank)
    return pairs, LinearLayout({"offset": bases, "block": [list(v) for v in cga.in_bases("block")]},
                               [(n, lshape[i]) for i, n in enumerate(names)])


def padded_offset(pairs: list[list[int]], offset: int) -> int:
    """Padding inserted after every `interval` elements, summed over the pairs."""
    return offset + sum((offset >> log2(interval)) << log2(pad) for interval, pad in pairs)
