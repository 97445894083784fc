"""Scratch bytes of a convert_layout through shared memory, for targets that lower it with plain
shared loads and stores (AMD): Allocation.cpp's getNumScratchElemsSwizzledCvt -> GenericSwizzling.cpp's
optimalSwizzlingLdSt (read at triton-lang/triton 014546ac), which splits the swizzled tile into
``reps`` rounds; scratch = tensor elements / reps x element bytes.

On NVIDIA targets Triton also weighs ldmatrix/stmatrix tiles (their per-target tile tables are not
reproduced), so there the caller gets no number. Bases are flattened as Triton's flattenOuts does
(dim0 most minor). Layouts whose register bases are not single bits are not handled (None).
"""

from __future__ import annotations

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
