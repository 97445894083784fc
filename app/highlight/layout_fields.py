"""One sentence per parameter of an encoding, with its actual numbers: ``sizePerThread = [1, 8]``
→ "each thread holds 8 consecutive elements along dim 1 (1 along dim 0)". :data:`FIELD_EXPLAINERS`
holds the explainers by encoding kind, :data:`COMMON_FIELDS` those any kind shares."""

from __future__ import annotations

import math
import re
from collections.abc import Callable

from app.highlight.layout_params import Context, parse_bases, parse_ints, parse_value
from app.highlight.layout_words import (
    bases_text,
    counted,
    dims_text,
    fastest_dim,
    parent_text,
    shape_text,
    verb,
)

Explain = Callable[[str, str, Context], str]


def generic_field(name: str, value: str, context: Context) -> str:
    return f"{name} is {value} (no explanation for this field yet)"


def _size_per_thread(name: str, value: str, context: Context) -> str:
    sizes = parse_ints(value)
    if not sizes:
        return generic_field(name, value, context)
    if len(sizes) == 1:
        return f"each thread holds {counted(sizes[0], 'consecutive element')}"
    if math.prod(sizes) == 1:
        return "each thread holds a single element (1 along each dim)"
    fastest = fastest_dim(context, len(sizes))
    others = ", ".join(f"{size} along dim {dim}" for dim, size in enumerate(sizes) if dim != fastest)
    return (
        f"each thread holds {counted(sizes[fastest], 'consecutive element')} along dim {fastest} ({others})"
    )


def _threads_per_warp(name: str, value: str, context: Context) -> str:
    counts = parse_ints(value)
    if not counts:
        return generic_field(name, value, context)
    total = math.prod(counts)
    if len(counts) == 1:
        return f"a warp's {total} threads lie along the one dim"
    return f"a warp's {total} threads are arranged {shape_text(counts)} ({dims_text(counts)})"


def _warps_per_cta(name: str, value: str, context: Context) -> str:
    counts = parse_ints(value)
    if not counts:
        return generic_field(name, value, context)
    total = math.prod(counts)
    if len(counts) == 1:
        return f"the CTA's {counted(total, 'warp')} lie along the one dim"
    return f"the CTA's {counted(total, 'warp')} are arranged {shape_text(counts)} ({dims_text(counts)})"


def _order(name: str, value: str, context: Context) -> str:
    order = parse_ints(value)
    if not order:
        return generic_field(name, value, context)
    if len(order) == 1:
        return f"dim {order[0]} is the only dim"
    rest = ", then ".join(f"dim {dim}" for dim in order[1:])
    return f"dim {order[0]} is fastest-varying, then {rest}"


def _ctas_per_cga(name: str, value: str, context: Context) -> str:
    counts = parse_ints(value)
    if counts and math.prod(counts) == 1:
        return "a single CTA per cluster (no multi-CTA split)"
    return f"CTAs per cluster (CGA) along each dim: {value}"


def _cta_split(name: str, value: str, context: Context) -> str:
    counts = parse_ints(value)
    if counts and math.prod(counts) == 1:
        return "the tensor is not split across CTAs"
    return f"how many pieces the tensor is split into across the cluster's CTAs, per dim: {value}"


def _cta_order(name: str, value: str, context: Context) -> str:
    return f"order of the CTAs in the cluster: {_order(name, value, context)}"


def _cga_layout(name: str, value: str, context: Context) -> str:
    bases = parse_bases(value)
    if bases is not None:
        return "multi-CTA layout: " + bases_text("block", bases)
    return f"multi-CTA (cluster) layout: {value}"


def _mma_version(name: str, value: str, context: Context) -> str:
    version = parse_value(value)
    meaning = {
        1: "Volta mma (sm_70)",
        2: "Ampere mma.sync (sm_80+; also used on Ada and as a fallback on Hopper)",
        3: "Hopper wgmma (warp-group MMA, sm_90)",
        5: "Blackwell tcgen05 MMA (sm_100)",
    }.get(version)
    return f"version {version}: {meaning}" if meaning else f"MMA version {version}"


def _mma_minor(name: str, value: str, context: Context) -> str:
    return f"minor version {value} (a variant of the major version; 0 is the default)"


def _mma_instr_shape(name: str, value: str, context: Context) -> str:
    shape = parse_ints(value)
    if not shape:
        return generic_field(name, value, context)
    major = context.int("versionMajor")
    if len(shape) == 3:
        m, n, k = shape
        text = f"one instruction computes an M×N = {m}×{n} tile with K = {k}"
        if major == 3:
            text += f" per warp (a warp group of 4 warps computes {4 * m}×{n})"
        return text
    if len(shape) == 2:
        return f"one instruction computes an M×N = {shape[0]}×{shape[1]} tile per warp"
    return f"instruction shape {shape_text(shape)}"


def _mfma_version(name: str, value: str, context: Context) -> str:
    version = parse_value(value)
    meaning = {
        1: "CDNA1 (MI100, gfx908)",
        2: "CDNA2 (MI200, gfx90a)",
        3: "CDNA3 (MI300, gfx942)",
        4: "CDNA4 (MI350, gfx950)",
    }.get(version)
    return f"MFMA version {version}: {meaning}" if meaning else f"MFMA version {version}"


def _wmma_version(name: str, value: str, context: Context) -> str:
    version = parse_value(value)
    meaning = {1: "RDNA3 (gfx11)", 2: "RDNA4 (gfx12)", 3: "gfx1250"}.get(version)
    return f"WMMA version {version}: {meaning}" if meaning else f"WMMA version {version}"


def _amd_instr_shape(name: str, value: str, context: Context) -> str:
    shape = parse_ints(value)
    if not shape:
        return generic_field(name, value, context)
    if len(shape) >= 3:
        return f"one instruction computes an M×N = {shape[0]}×{shape[1]} tile with K = {shape[2]}"
    if len(shape) == 2:
        return f"one instruction computes an M×N = {shape[0]}×{shape[1]} tile"
    return f"instruction shape {shape_text(shape)}"


def _amd_transposed(name: str, value: str, context: Context) -> str:
    if parse_value(value) is True:
        return (
            "true: the result is computed transposed, so each thread holds consecutive elements"
            " along dim 1 (N), which allows wider stores"
        )
    return "false: each thread's consecutive result elements run along dim 0 (M)"


def _amd_warps(name: str, value: str, context: Context) -> str:
    counts = parse_ints(value)
    if not counts:
        return generic_field(name, value, context)
    total = math.prod(counts)
    return (
        f"the CTA's {counted(total, 'warp')} (wavefronts) are arranged {shape_text(counts)}"
        f" ({dims_text(counts)})"
    )


def _cta_layout(name: str, value: str, context: Context) -> str:
    parsed = parse_value(value)
    if isinstance(parsed, dict):
        parts = []
        for key, bases in parsed.items():
            if isinstance(bases, list) and all(isinstance(base, list) for base in bases):
                parts.append(bases_text(key, bases))
        if parts:
            return "; ".join(parts)
    return f"how warps and CTAs are placed: {value}"


def _slice_dim(name: str, value: str, context: Context) -> str:
    return (
        f"dim {value} of the parent layout is removed (the tensor is the parent's, reduced along dim {value})"
    )


def _parent(name: str, value: str, context: Context) -> str:
    return f"the layout this one derives from: {parent_text(value, context)}"


def _dot_parent(name: str, value: str, context: Context) -> str:
    return f"the layout of the dot's result, which fixes this operand's layout: {parent_text(value, context)}"


def _op_idx(name: str, value: str, context: Context) -> str:
    index = parse_value(value)
    if index == 0:
        return "0 = A operand (left-hand side, M×K)"
    if index == 1:
        return "1 = B operand (right-hand side, K×N)"
    return f"operand index {value}"


def _k_width(name: str, value: str, context: Context) -> str:
    width = parse_value(value)
    if isinstance(width, int):
        return f"each thread holds {counted(width, 'consecutive element')} along K"
    return generic_field(name, value, context)


def _linear_field(name: str, value: str, context: Context) -> str:
    bases = parse_bases(value)
    if bases is None:
        return generic_field(name, value, context)
    return bases_text(name, bases)


def _vec(name: str, value: str, context: Context) -> str:
    count = parse_value(value)
    if count == 1:
        return "1 element per vector: the swizzle moves single elements"
    return f"{count} elements form a contiguous vector that the swizzle never splits"


def _per_phase(name: str, value: str, context: Context) -> str:
    count = parse_value(value)
    return f"{counted(count, 'row')} {verb(count, 'shares', 'share')} each swizzle phase"


def _max_phase(name: str, value: str, context: Context) -> str:
    phases = parse_value(value)
    if phases == 1:
        return "1 phase: no swizzling"
    return f"{phases} different swizzle phases (XOR patterns) before the pattern repeats"


def _shared_order(name: str, value: str, context: Context) -> str:
    return _order(name, value, context) + " in shared memory"


def _leading_offset(name: str, value: str, context: Context) -> str:
    if parse_value(value) is True:
        return "true: an MMAv3 (wgmma/TMA) layout addressed with a leading offset"
    return "false: a classic swizzled layout"


def _swizzle_bytes(name: str, value: str, context: Context) -> str:
    width = parse_value(value)
    if width == 0:
        return "0: no swizzling"
    return f"{width}-byte swizzle (the TMA/wgmma {width}B swizzle mode)"


def _transposed(name: str, value: str, context: Context) -> str:
    if parse_value(value) is True:
        return "true: dim 0 is contiguous in shared memory (column-major)"
    return "false: the last dim is contiguous in shared memory (row-major)"


def _element_bits(name: str, value: str, context: Context) -> str:
    bits = parse_value(value)
    width = context.int("swizzlingByteWidth")
    if isinstance(bits, int) and bits > 0 and width:
        return f"{bits}-bit elements, so one {width}-byte swizzle row holds {width * 8 // bits} elements"
    return f"{bits}-bit elements"


def _fp4_padded(name: str, value: str, context: Context) -> str:
    if parse_value(value) is True:
        return "true: fp4 elements are padded (each 4-bit value takes a byte)"
    return "false: no fp4 padding"


def _intervals(name: str, value: str, context: Context) -> str:
    pairs = re.findall(r"(\d+)\s*:\s*\+?(\d+)", value)
    if not pairs:
        return generic_field(name, value, context)
    words = "; ".join(
        f"after every {interval} elements, {counted(int(pad), 'padding element')} are inserted"
        for interval, pad in pairs
    )
    return words + " (to avoid shared-memory bank conflicts)"


def _padded_shape(name: str, value: str, context: Context) -> str:
    shape = parse_ints(value)
    return f"the layout covers a {shape_text(shape)} block" if shape else generic_field(name, value, context)


def _block_m(name: str, value: str, context: Context) -> str:
    return f"each block of tensor memory spans {value} rows (M)"


def _block_n(name: str, value: str, context: Context) -> str:
    return f"each block of tensor memory spans {value} columns (N)"


def _col_stride(name: str, value: str, context: Context) -> str:
    stride = parse_value(value)
    if stride == 1:
        return "1: packed, consecutive elements of a row sit in consecutive columns"
    return f"{stride}: consecutive elements of a row are {stride} columns apart (the gaps are unused)"


def _unpacked(name: str, value: str, context: Context) -> str:
    if parse_value(value) is True:
        return "true: each element takes a whole 32-bit column (unpacked)"
    return "false: narrow elements are packed into 32-bit columns"


def _two_ctas(name: str, value: str, context: Context) -> str:
    if parse_value(value) is True:
        return "true: laid out for two-CTA MMA (cta_group::2)"
    return "false: one CTA"


COMMON_FIELDS: dict[str, Explain] = {
    "warpsPerCTA": _warps_per_cta,
    "order": _order,
    "CTAsPerCGA": _ctas_per_cga,
    "CTASplitNum": _cta_split,
    "CTAOrder": _cta_order,
    "CGALayout": _cga_layout,
    "register": _linear_field,
    "lane": _linear_field,
    "warp": _linear_field,
    "block": _linear_field,
    "offset": _linear_field,
    "instrShape": _amd_instr_shape,
    "parent": _parent,
}

_SWIZZLED_FIELDS: dict[str, Explain] = {
    "vec": _vec,
    "perPhase": _per_phase,
    "maxPhase": _max_phase,
    "order": _shared_order,
    "hasLeadingOffset": _leading_offset,
}

FIELD_EXPLAINERS: dict[str, dict[str, Explain]] = {
    "blocked": {"sizePerThread": _size_per_thread, "threadsPerWarp": _threads_per_warp},
    "nvidia_mma": {
        "versionMajor": _mma_version,
        "versionMinor": _mma_minor,
        "instrShape": _mma_instr_shape,
    },
    "amd_mfma": {
        "version": _mfma_version,
        "versionMajor": _mfma_version,
        "versionMinor": _mma_minor,
        "warpsPerCTA": _amd_warps,
        "isTransposed": _amd_transposed,
    },
    "amd_wmma": {
        "version": _wmma_version,
        "warpsPerCTA": _amd_warps,
        "isTranspose": _amd_transposed,
        "isTransposed": _amd_transposed,
        "ctaLayout": _cta_layout,
    },
    "slice": {"dim": _slice_dim},
    "dot_op": {"opIdx": _op_idx, "parent": _dot_parent, "kWidth": _k_width},
    "swizzled_shared": _SWIZZLED_FIELDS,
    "shared": {
        **_SWIZZLED_FIELDS,
        "swizzlingByteWidth": _swizzle_bytes,
        "transposed": _transposed,
        "elementBitWidth": _element_bits,
    },
    "amd_rotating_shared": _SWIZZLED_FIELDS,
    "nvmma_shared": {
        "swizzlingByteWidth": _swizzle_bytes,
        "transposed": _transposed,
        "elementBitWidth": _element_bits,
        "fp4Padded": _fp4_padded,
    },
    "padded_shared": {"intervals": _intervals, "shape": _padded_shape, "order": _shared_order},
    "partitioned_shared": {
        "numPartitions": lambda name, value, context: (
            f"{value} separate shared-memory buffers (partitions), placed in different physical"
            " memory partitions to avoid conflicts"
        ),
        "numGroups": lambda name, value, context: f"{value} groups, each holding one piece per partition",
        "partitionDim": lambda name, value, context: f"the tensor is cut into pieces along dim {value}",
        "partitionLayout": lambda name, value, context: (
            f"the shared layout used inside each piece: {parent_text(value, context)}"
        ),
    },
    "shared_linear": {
        "alignment": lambda name, value, context: f"the allocation is aligned to {value} bytes",
    },
    "tensor_memory_encoding": {
        "blockM": _block_m,
        "blockN": _block_n,
        "colStride": _col_stride,
        "unpacked": _unpacked,
        "twoCTAs": _two_ctas,
        "fp4Padded": _fp4_padded,
    },
}
