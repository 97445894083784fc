"""Scratch bytes of a convert_layout through shared memory, for targets that lower it with plain
shared loads and stores (AMD): Allocation.cpp's getNumScratchElemsSwizzledCvt -> GenericSwizzling.cpp's
optimalSwizzlingLdSt (read at triton-lang/triton 014546ac), which splits the swizzled tile into
``reps`` rounds; scratch = tensor elements / reps x element bytes.

On NVIDIA targets Triton also weighs ldmatrix/stmatrix tiles (getSrcDstTiles, optimalSwizzling with
tiles): tiled_scratch_bytes. Bases are flattened as Triton's flattenOuts does
(dim0 most minor). Bases are single bits: Triton 3.9 admits no other distributed layout
(LinearEncodingAttr's verifier, mirrored in distributed.linear), so the None paths are defensive.
"""

from __future__ import annotations

from app.layouts.compose import composed  # the one pseudo-inverse, shared with the cost kinds
from app.layouts.linear import LinearLayout


def _flat(ll: LinearLayout, basis: list[int]) -> int:
    idx, stride = 0, 1
    for (_, size), v in zip(ll.outs, basis):
        idx += v * stride
        stride *= size
    return idx


def _bases(ll: LinearLayout, dim: str) -> list[int]:
    return [_flat(ll, b) for b in ll.in_bases(dim)]


def _log2(x: int) -> int:
    return x.bit_length() - 1


def _after_bank0(regs: list[int], vbasis: list[int], other_lane: set[int], bitwidth: int) -> list[int]:
    """Registers of one side that are lanes of the other: more vectorisation, no new conflicts."""
    vec, most = [], _log2(128 // max(bitwidth, 32))
    for r in regs:
        if r in vbasis:
            continue
        if r in other_lane:
            vec.append(r)
        if len(vec) == most:
            break
    return vec


def _vbasis(reg_src: list[int], reg_dst: list[int], lane_src: set[int], lane_dst: set[int], bitwidth: int) -> list[int]:
    """getVbasis: the shared register bases, widened to fill a 32-bit bank word."""
    dst_set = set(reg_dst)
    vbasis = [b for b in reg_src if b in dst_set][:_log2(128 // bitwidth)]
    per_bank = 0 if bitwidth > 32 else _log2(32 // bitwidth)
    vec_src = True
    if (1 << len(vbasis)) * bitwidth < 32:
        src_prefix, dst_prefix = reg_src[:len(vbasis)] == vbasis, reg_dst[:len(vbasis)] == vbasis
        if vbasis and not src_prefix and not dst_prefix:
            reg_src = vbasis + [r for r in reg_src if r not in vbasis]
            reg_dst = vbasis + [r for r in reg_dst if r not in vbasis]
            src_prefix = dst_prefix = True

        def fill(regs: list[int]) -> list[int]:
            return vbasis + [regs[i] for i in range(len(vbasis), min(per_bank, len(regs)))]

        if src_prefix and dst_prefix:
            a = _after_bank0(reg_src, fill(reg_src), lane_dst, bitwidth)
            b = _after_bank0(reg_dst, fill(reg_dst), lane_src, bitwidth)
            src_prefix = a >= b  # C++ compares the two vectors lexicographically
        vec_src = src_prefix
        vbasis = fill(reg_src if vec_src else reg_dst)
    extra = _after_bank0(reg_src, vbasis, lane_dst, bitwidth) if vec_src else \
        _after_bank0(reg_dst, vbasis, lane_src, bitwidth)
    return vbasis + extra


def _segment(bank_src: list[int], bank_dst: list[int], dim: int, length: int) -> list[int]:
    """computeSegment: free bits first, then pairs that keep reads and writes conflict-free."""
    set_src, set_dst = set(bank_src) - {0}, set(bank_dst) - {0}
    segment = [1 << b for b in range(dim) if (1 << b) not in set_src and (1 << b) not in set_dst]
    if len(segment) >= length:
        return segment[:length]
    a = sorted(v for v in set_src if v not in set_dst)
    b = sorted(v for v in set_dst if v not in set_src)
    if len(a) > len(b):
        a, b = b, a
    conflicts = min(max(0, length - len(a) - len(segment)), len(a))
    segment += [a[i] ^ b[i] for i in range(conflicts, len(a))]
    segment += a[:conflicts] + b[:conflicts]
    return segment[:length]


def ldst_scratch_bytes(src: LinearLayout, dst: LinearLayout, bitwidth: int) -> int | None:
    bitwidth = max(bitwidth, 8)  # the lowering widens sub-byte types to bytes
    reg_src = [b for b in _bases(src, "register") if b]  # actionRemoveBroadcastedRegs
    reg_dst = [b for b in _bases(dst, "register") if b]
    if any(b & (b - 1) for b in reg_src + reg_dst):
        return None
    lane_src, lane_dst = _bases(src, "lane"), _bases(dst, "lane")
    total = 1
    for _, size in src.outs:
        total *= size
    dim = _log2(total)
    vbasis = _vbasis(reg_src, reg_dst, set(lane_src), set(lane_dst), bitwidth)

    def tile(lanes: list[int], regs: list[int]) -> list[int]:
        size = next((i for i, v in enumerate(vbasis) if not (i < len(regs) and regs[i] == v)), len(vbasis))
        if (1 << size) * bitwidth > 32:  # 64- or 128-bit accesses cover that many lanes' words
            lanes = lanes[:len(lanes) - _log2((1 << size) * bitwidth // 32)]
        return [b for b in lanes if b not in vbasis]

    len_bank = min(_log2(1024 // ((1 << len(vbasis)) * bitwidth)), dim - len(vbasis))
    segment = _segment(vbasis + tile(lane_src, reg_src), vbasis + tile(lane_dst, reg_dst), dim,
                       dim - len_bank - len(vbasis))
    both = set(reg_src) & set(reg_dst)
    reps = sum(1 for s in segment if s in both)
    return (total >> reps) * bitwidth // 8


# -- NVIDIA: ld/st.shared plus ldmatrix/stmatrix tiles (getSrcDstTiles, optimalSwizzling) ----------

def _rank(vectors: list[int]) -> int:
    basis: list[int] = []
    for v in vectors:
        for b in basis:
            v = min(v, v ^ b)
        if v:
            basis.append(v)
    return len(basis)


def _common_dims(a: list[int], b: list[int]) -> int:
    """Dimension of span(a) ∩ span(b) (what intersectionBasis(...).size() counts)."""
    return _rank(a) + _rank(b) - _rank(a + b)


def _tiles(bitwidth: int, ldmatrix: bool, stmatrix: bool) -> tuple[list, list]:
    """getSrcDstTiles: (laneContig, laneAddr) of each shared-memory store (src) and load (dst)."""
    ldst = ((), (0, 1, 2))
    src, dst = [ldst], [ldst]
    if ldmatrix or stmatrix:
        if bitwidth <= 32:
            if stmatrix:
                src.append(((0, 1), (2, 3, 4)))
            if ldmatrix:
                dst.append(((0, 1), (2, 3, 4)))
        if bitwidth == 16:
            if stmatrix:
                src.append(((2, 3, 4), (0, 1)))
            if ldmatrix:
                dst.append(((2, 3, 4), (0, 1)))
    return src, dst


def _lane_images(a: LinearLayout, b: LinearLayout) -> list[dict[str, int]]:
    """b.invertAndCompose(a) restricted to b's lane bits: where each of b's lanes lands in a's
    hardware (indexed by b's lane, as optimalSwizzlingTile reads it: cvt.getBasis(kLane, idxB, ...))."""
    return composed(b, a)["lane"]


def _tile_vbasis(a: LinearLayout, b: LinearLayout, n_reg_a: int, n_reg_b: int, tile_a, tile_b):
    """optimalSwizzlingTile: registers common to both, then the lanes the instructions address."""
    if n_reg_a < n_reg_b:
        return _tile_vbasis(b, a, n_reg_b, n_reg_a, tile_b, tile_a)
    reg_a = [x for x in _bases(a, "register") if x]
    reg_b = {x for x in _bases(b, "register") if x}
    lane_a, lane_b = _bases(a, "lane"), _bases(b, "lane")
    vbasis = [x for x in reg_a if x in reg_b]
    if len(vbasis) < n_reg_b or max(tile_a + tile_b, default=0) >= min(len(lane_a), len(lane_b)):
        return None
    vbasis = vbasis[:n_reg_b]
    lane_tile_a, lane_tile_b = [lane_a[i] for i in tile_a], [lane_b[i] for i in tile_b]
    if 0 in lane_tile_a or 0 in lane_tile_b:
        return None
    images = _lane_images(a, b)
    for i in range(n_reg_a - n_reg_b):
        if images[tile_b[i]]["register"] == 0:
            return None
    for idx_a, idx_b in zip(tile_a, tile_b[len(tile_b) - len(tile_a):]):
        if images[idx_b]["register"] or images[idx_b]["warp"] or images[idx_b]["block"] \
                or images[idx_b]["lane"] != 1 << idx_a:
            return None
    return vbasis + lane_tile_b


def tiled_scratch_bytes(src: LinearLayout, dst: LinearLayout, bitwidth: int, ldmatrix: bool = True,
                        stmatrix: bool = True) -> int | None:
    """optimalSwizzling with the target's tiles: each (store, load) instruction pair that fits gives a
    swizzled tile; the fewest bank conflicts wins, ties go to more repetitions (less scratch)."""
    found = tiled_swizzle(src, dst, bitwidth, ldmatrix, stmatrix)
    return None if found is None else found[0]


def tiled_swizzle(src: LinearLayout, dst: LinearLayout, bitwidth: int, ldmatrix: bool = True,
                  stmatrix: bool = True) -> tuple[int, int | None, int | None] | None:
    """(scratch bytes, read conflicts, write conflicts) of the swizzled tile optimalSwizzling picks:
    the conflicts are bankConflicts(tileSrc, tileDst, smem) of that tile (null on the ld/st fallback)."""
    bitwidth = max(bitwidth, 8)
    src, dst = _drop_broadcast_registers(src), _drop_broadcast_registers(dst)
    reg_src = _bases(src, "register")
    reg_dst = _bases(dst, "register")
    if any(b & (b - 1) for b in reg_src + reg_dst):
        return None
    lane_src, lane_dst = _bases(src, "lane"), _bases(dst, "lane")
    total = 1
    for _, size in src.outs:
        total *= size
    dim = _log2(total)
    total_bases = _log2(128 // bitwidth)
    src_tiles, dst_tiles = _tiles(bitwidth, ldmatrix, stmatrix)
    options = []
    for contig_s, addr_s in src_tiles:
        for contig_d, addr_d in dst_tiles:
            vbasis = _tile_vbasis(src, dst, total_bases - len(contig_s), total_bases - len(contig_d),
                                  list(contig_s), list(contig_d))
            if vbasis is None:
                continue
            tile_s = _pick_tile(addr_s, reg_src, lane_src, vbasis)
            tile_d = _pick_tile(addr_d, reg_dst, lane_dst, vbasis)
            if tile_s is None or tile_d is None:
                continue
            leave = min(len(contig_s) + len(addr_s) - 3, len(contig_d) + len(addr_d) - 3)
            options.append((vbasis, tile_s, tile_d, leave))
    if not options:
        size = ldst_scratch_bytes(src, dst, bitwidth)
        return None if size is None else (size, None, None)
    best = None
    for vbasis, tile_s, tile_d, leave in options:
        len_bank = min(_log2(1024 // ((1 << len(vbasis)) * bitwidth)), dim - len(vbasis))
        segment = _segment(vbasis + tile_s, vbasis + tile_d, dim, dim - len_bank - len(vbasis))
        both = set(reg_src) & set(reg_dst)
        kept, reps = [], 0
        for s in segment:  # buildReps: the first `leave` common registers stay (ldmatrix .x2/.x4)
            if s in both:
                if leave > 0:
                    leave -= 1
                    kept.append(s)
                else:
                    reps += 1
            else:
                kept.append(s)
        read, write = (1 << _common_dims(kept, tile_d)) - 1, (1 << _common_dims(kept, tile_s)) - 1
        conflicts = read + write
        if best is None or conflicts < best[0] or (conflicts == best[0] and reps > best[1]):
            best = (conflicts, reps, read, write)
    return (total >> best[1]) * bitwidth // 8, best[2], best[3]


def _pick_tile(addr, regs: list[int], lanes: list[int], vbasis: list[int]) -> list[int] | None:
    """getTile: the first 3 - len(laneAddr) registers outside vbasis, then the addressed lanes."""
    need = 3 - len(addr)
    tile = []
    for r in regs:
        if need == 0:
            break
        if r not in vbasis:
            tile.append(r)
            need -= 1
    if need > 0 or max(addr, default=0) >= len(lanes):
        return None
    return tile + [lanes[i] for i in addr]


def _drop_broadcast_registers(ll: LinearLayout) -> LinearLayout:
    bases = dict(ll.bases)
    bases["register"] = [b for b in ll.in_bases("register") if any(b)]
    return LinearLayout(bases, list(ll.outs))
