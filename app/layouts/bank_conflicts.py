"""Shared-memory bank conflicts of reading or writing a distributed tensor from or to a shared layout,
as Triton 3.9 counts them (Gluon's ``bank_conflicts(distributed_type, shared_type)``, backed by
lib/Tools/GenericSwizzling.cpp ``bankConflictsMemDesc`` with 32 banks and plain ld/st.shared).

The answer is the excess accesses per wavefront: 0 when every wavefront of an ld.shared/st.shared
is served in one pass, 2**k - 1 when k independent directions of the lanes in one wavefront land on
the same banks at different words. In Triton's terms:

1. drop broadcast register bases; map every hardware bit of the distributed layout to the shared
   layout's (offset, block) index (``invertAndCompose``);
2. vectorise: the largest v <= 128 / bitwidth with register bits at offsets 1, 2, ... v/2 and every
   other bit a multiple of v (``largestVectorisation``);
3. split the shared layout's (offset, block) bits into v vector elements, 32 x 32 / (v x bitwidth)
   banks and the rest ("segment": the bits that choose a different word of the same bank);
4. the lanes of one wavefront are the lane bits left after a wide access (v x bitwidth > 32 bits)
   takes whole phases of lanes; the conflicts are 2**dim(span(segment) ∩ span(lanes)) - 1.

Pure Python over app/layouts' linear layouts; checked pair by pair against Triton 3.9 in
tests/test_bank_conflicts.py (fixture tests/layout_cases/triton39_bank_conflicts.json.gz).
AMD's LDS (64 banks, ds_read/ds_write tiles) is not modelled: ``bank_conflicts`` answers with
NVIDIA's 32-bank rule, which is what Gluon's ``bank_conflicts`` reports on every target.
"""

from __future__ import annotations

from app.layouts.errors import LayoutError
from app.layouts.linear import LinearLayout, out_names

NUM_BANKS = 32
BANK_BITS = 32  # one bank word


def _flatten(ll: LinearLayout, names: list[str], basis: list[int]) -> int:
    """Triton's flattenOuts: dim0 most minor, by name (so two layouts flatten alike)."""
    idx, stride = 0, 1
    own = ll.out_dim_names
    for name in names:
        v = basis[own.index(name)] if name in own else 0
        idx += v * stride
        stride *= ll.out_size(name)
    return idx


def _rank(vectors: list[int]) -> int:
    basis: list[int] = []
    for v in vectors:
        for b in basis:
            v = min(v, v ^ b)
        if v:
            basis.append(v)
    return len(basis)


def _intersection_size(b1: list[int], b2: list[int]) -> int:
    """intersectionBasis(b1, b2).size(): with only powers of two Triton keeps b1's entries found in
    b2 (a set test); otherwise the dimension of span(b1) ∩ span(b2)."""
    pow2 = all(x > 0 and not x & (x - 1) for x in b1 + b2)
    if pow2:
        s2 = set(b2)
        return sum(1 for x in b1 if x and x in s2)
    return _rank(b1) + _rank(b2) - _rank(b1 + b2)


def _solver(columns: list[int]):
    """Express a flat element index in the shared layout's (offset, block) bits: a bit mask over
    ``columns`` (free columns at zero), or None when the shared layout does not hold it."""
    pivots: list[tuple[int, int]] = []
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


def _vectorisation(cvt: dict[str, list[int]], n_offset: int, bitwidth: int) -> int:
    """largestVectorisation: cvt maps each hardware bit to its (offset | block << n_offset) index."""
    offset_mask = (1 << n_offset) - 1
    v = max(128 // bitwidth, 1)
    while v > 1:
        k = v.bit_length() - 1
        if k <= n_offset:
            regs = list(cvt["register"])
            used: set[int] = set()
            ok = True
            for i in range(k):
                j = next((j for j, r in enumerate(regs) if j not in used and r == 1 << i), None)
                if j is None:
                    ok = False
                    break
                used.add(j)
            if ok:
                rest = [r for j, r in enumerate(regs) if j not in used]
                for dim in ("lane", "warp", "block"):
                    rest += cvt[dim]
                if all((r & offset_mask) % v == 0 for r in rest):
                    return v
        v //= 2
    return 1


def analyse(reg: LinearLayout, smem: LinearLayout, bitwidth: int) -> dict:
    """Triton 3.9's bankConflictsMemDesc(reg, smem, bitwidth) with what it is made of:
    {"bank_conflicts", "wavefronts", "vector", "banks", "lanes_per_wavefront", "segment", "lane_tile"}."""
    if bitwidth <= 0 or bitwidth > 128 or bitwidth & (bitwidth - 1):
        raise LayoutError(f"an element of {bitwidth} bits: bank conflicts are counted for widths of 1 to 128 "
                          "bits, powers of two")
    rank = len(reg.outs)
    names = out_names(rank)
    if [reg.out_size(n) for n in names] != [smem.out_size(n) for n in names]:
        raise LayoutError("the distributed and shared layouts cover different shapes")
    offsets = [_flatten(smem, names, b) for b in smem.in_bases("offset")]
    blocks = [_flatten(smem, names, b) for b in smem.in_bases("block")]
    columns = offsets + blocks
    solve = _solver(columns)
    cvt: dict[str, list[int]] = {}
    flat: dict[str, list[int]] = {}
    for dim in ("register", "lane", "warp", "block"):
        bases = reg.in_bases(dim)
        if dim == "register":
            bases = [b for b in bases if any(b)]  # actionRemoveBroadcastedRegs
        flat[dim] = [_flatten(reg, names, b) for b in bases]
        images = []
        for f in flat[dim]:
            combo = solve(f)
            if combo is None:
                raise LayoutError("the shared layout does not hold every element of the distributed one")
            images.append(combo)
        cvt[dim] = images
    vec = _vectorisation(cvt, len(offsets), bitwidth)
    total_bits = len(columns)
    total = 1 << total_bits
    bank_size = min(NUM_BANKS * BANK_BITS // (vec * bitwidth), total)
    segment_size = total // (bank_size * vec)
    if segment_size < 1:
        # Triton's reshapeIns would be handed a zero-sized dim: a tensor smaller than one
        # vectorised wavefront has no second word in any bank.
        segment_bits = 0
    else:
        segment_bits = segment_size.bit_length() - 1
    vec_bits, bank_bits = vec.bit_length() - 1, bank_size.bit_length() - 1
    segment = columns[vec_bits + bank_bits:vec_bits + bank_bits + segment_bits]
    lanes = flat["lane"]
    log2_vec = (max(1, vec * bitwidth // BANK_BITS)).bit_length() - 1
    log2_phase = max(0, log2_vec + len(lanes) - (NUM_BANKS.bit_length() - 1))
    tile = lanes[:len(lanes) - log2_phase]
    k = _intersection_size(segment, tile)
    conflicts = (1 << k) - 1
    return {"bank_conflicts": conflicts, "wavefronts": conflicts + 1, "vector": vec,
            "access_bits": vec * bitwidth, "banks": bank_size, "lanes_per_wavefront": 1 << len(tile),
            "segment": segment, "lane_tile": tile, "element_bits": bitwidth}


def bank_conflicts(reg: LinearLayout, smem: LinearLayout, bitwidth: int) -> int:
    """The number Gluon's ``bank_conflicts`` returns for this pair."""
    return analyse(reg, smem, bitwidth)["bank_conflicts"]


def wavefront_picture(reg: LinearLayout, smem: LinearLayout, bitwidth: int, vector: int) -> list[dict]:
    """The first access of warp 0 drawn lane by lane: each lane's first element, its shared-memory
    word and bank, and the wavefront (a pass over the banks) that serves it — lanes reading the same
    word share a pass, different words of one bank take one pass each. This brute force is what
    Triton's count models; the count itself comes from ``analyse``."""
    names = out_names(len(reg.outs))
    columns = [_flatten(smem, names, b) for b in smem.in_bases("offset")]
    solve = _solver(columns)
    lane_bases = [_flatten(reg, names, b) for b in reg.in_bases("lane")]
    out = []
    words_per_bank: dict[int, list[int]] = {}
    access_words = max(1, vector * bitwidth // BANK_BITS)
    lanes_per_phase = max(1, NUM_BANKS // access_words)
    for lane in range(1 << len(lane_bases)):
        if lane >= lanes_per_phase:
            break
        element = 0
        for i, b in enumerate(lane_bases):
            if lane >> i & 1:
                element ^= b
        combo = solve(element)
        if combo is None:
            return []
        word = combo * bitwidth // BANK_BITS
        bank = word % NUM_BANKS
        seen = words_per_bank.setdefault(bank, [])
        if word not in seen:
            seen.append(word)
        out.append({"lane": lane, "offset": combo, "word": word, "bank": bank,
                    "wavefront": seen.index(word), "words": access_words})
    return out
