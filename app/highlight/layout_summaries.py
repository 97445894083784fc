"""One sentence per encoding kind, summing it up (``blocked: 4 warps × 32 threads cover a 64×64
tile per repetition...``); :data:`SUMMARIES` by kind, :func:`generic_summary` for the others."""

from __future__ import annotations

import math
import re
from collections.abc import Callable

from app.highlight.layout_params import Context, parse_bases, parse_value
from app.highlight.layout_words import counted, fastest_dim, linear_tile, shape_text, tile_text

Summary = Callable[[str, Context], str]


def generic_summary(kind: str, context: Context) -> str:
    names = ", ".join(context.params) or "no parameters"
    return f"{kind} encoding ({names})"


def _blocked_summary(kind: str, context: Context) -> str:
    sizes = context.ints("sizePerThread")
    threads = context.ints("threadsPerWarp")
    warps = context.ints("warpsPerCTA")
    if not (sizes and threads and warps and len(sizes) == len(threads) == len(warps)):
        return generic_summary(kind, context)
    tile = [s * t * w for s, t, w in zip(sizes, threads, warps, strict=True)]
    text = (
        f"blocked: {counted(math.prod(warps), 'warp')} × {counted(math.prod(threads), 'thread')}"
        f" cover {tile_text(tile)} per repetition"
    )
    if len(sizes) > 1:
        text += f", {counted(math.prod(sizes), 'element')} per thread ({shape_text(sizes)})"
        text += f", dim {fastest_dim(context, len(sizes))} fastest"
    return text


def _nvidia_mma_summary(kind: str, context: Context) -> str:
    major = context.int("versionMajor")
    warps = context.ints("warpsPerCTA")
    shape = context.ints("instrShape")
    name = {1: "Volta mma", 2: "Ampere mma.sync", 3: "Hopper wgmma", 5: "Blackwell tcgen05"}.get(
        major or -1, f"MMA v{major}"
    )
    text = f"nvidia_mma: {name}"
    if warps:
        text += f", {counted(math.prod(warps), 'warp')} arranged {shape_text(warps)}"
    if shape:
        text += f", instruction tile {shape_text(shape)}" + (" (M×N×K)" if len(shape) == 3 else " (M×N)")
        if warps and len(warps) >= 2 and len(shape) >= 2:
            text += f"; covers {warps[-2] * shape[0]}×{warps[-1] * shape[1]} per repetition"
    return text


def _amd_mma_summary(kind: str, context: Context) -> str:
    version = context.int("version") or context.int("versionMajor")
    shape = context.ints("instrShape")
    warps = context.ints("warpsPerCTA")
    text = f"{kind}: version {version}" if version is not None else kind
    if warps:
        text += f", {counted(math.prod(warps), 'warp')} arranged {shape_text(warps)}"
    else:
        layout = parse_value(context.params.get("ctaLayout", ""))
        if isinstance(layout, dict) and isinstance(layout.get("warp"), list):
            text += f", {counted(2 ** len(layout['warp']), 'warp')}"
    if shape:
        text += f", instruction tile {shape_text(shape)}" + (" (M×N×K)" if len(shape) == 3 else "")
    transposed = context.flag("isTransposed")
    if transposed is None:
        transposed = context.flag("isTranspose")
    if transposed is not None:
        text += ", transposed" if transposed else ", not transposed"
    return text


def _slice_summary(kind: str, context: Context) -> str:
    dim = context.params.get("dim", "?")
    parent = context.params.get("parent", "?")
    return f"slice: {parent} with dim {dim} removed"


def _dot_op_summary(kind: str, context: Context) -> str:
    operand = {0: "A (left) operand", 1: "B (right) operand"}.get(context.int("opIdx"), "operand")
    text = f"dot_op: the {operand} of a dot whose result has layout {context.params.get('parent', '?')}"
    width = context.int("kWidth")
    if width:
        text += f", {width} consecutive K elements per thread"
    return text


def _linear_summary(kind: str, context: Context) -> str:
    bases = {
        name: found for name, value in context.params.items() if (found := parse_bases(value)) is not None
    }
    parts = [f"{2 ** len(value)} {name}s" for name, value in bases.items() if value]
    text = f"{kind}: " + (" × ".join(parts) if parts else "no bases")
    tile = linear_tile(bases)
    if tile:
        text += f" cover {tile_text(tile)}"
    return text


def _swizzled_summary(kind: str, context: Context) -> str:
    vec, per_phase, max_phase = context.int("vec"), context.int("perPhase"), context.int("maxPhase")
    order = context.ints("order")
    fastest = f", dim {order[0]} contiguous" if order else ""
    if max_phase == 1 or vec is None:
        return f"{kind}: unswizzled shared memory{fastest}"
    return (
        f"{kind}: shared memory XOR-swizzled in {vec}-element vectors, {max_phase} phases,"
        f" {counted(per_phase or 1, 'row')} per phase{fastest}"
    )


def _nvmma_summary(kind: str, context: Context) -> str:
    width = context.int("swizzlingByteWidth")
    bits = context.int("elementBitWidth")
    transposed = context.flag("transposed")
    text = f"{kind}: "
    text += f"{width}-byte swizzled" if width else "unswizzled"
    text += " shared memory for TMA and wgmma"
    if bits:
        text += f", {bits}-bit elements"
        if width:
            text += f" ({width * 8 // bits} per {width}-byte row)"
    if transposed is not None:
        text += ", column-major" if transposed else ", row-major"
    return text


def _padded_summary(kind: str, context: Context) -> str:
    pairs = re.findall(r"(\d+)\s*:\s*\+?(\d+)", context.params.get("intervals", ""))
    shape = context.ints("shape")
    text = f"{kind}: shared memory with "
    text += ", ".join(f"{pad} padding elements every {interval}" for interval, pad in pairs) or "padding"
    if shape:
        text += f", for a {shape_text(shape)} block"
    return text


def _tmem_summary(kind: str, context: Context) -> str:
    block_m, block_n = context.int("blockM"), context.int("blockN")
    stride = context.int("colStride")
    text = "tensor memory"
    if block_m and block_n:
        text += f" in {block_m}×{block_n} blocks"
    if stride is not None:
        text += ", packed" if stride == 1 else f", column stride {stride}"
    return text


def _partitioned_summary(kind: str, context: Context) -> str:
    partitions, groups = context.int("numPartitions"), context.int("numGroups")
    dim = context.params.get("partitionDim", "?")
    text = f"{kind}: the tensor is cut along dim {dim}"
    if partitions and groups:
        text += f" into {partitions * groups} pieces in {counted(partitions, 'separate buffer')}"
    layout = context.params.get("partitionLayout")
    if layout:
        text += f", each piece laid out as {layout}"
    return text


def _fixed(sentence: str) -> Summary:
    return lambda kind, context: sentence


SUMMARIES: dict[str, Summary] = {
    "blocked": _blocked_summary,
    "nvidia_mma": _nvidia_mma_summary,
    "amd_mfma": _amd_mma_summary,
    "amd_wmma": _amd_mma_summary,
    "slice": _slice_summary,
    "dot_op": _dot_op_summary,
    "linear": _linear_summary,
    "shared_linear": _linear_summary,
    "swizzled_shared": _swizzled_summary,
    "amd_rotating_shared": _swizzled_summary,
    "nvmma_shared": _nvmma_summary,
    "padded_shared": _padded_summary,
    "partitioned_shared": _partitioned_summary,
    "tensor_memory_encoding": _tmem_summary,
    "shared_memory": _fixed("the shared-memory address space (a memory space, not a layout)"),
    "tensor_memory": _fixed("Blackwell tensor memory (TMEM), a memory space, not a layout"),
    "tensor_memory_scales_encoding": _fixed("the special tensor-memory layout for MMA scale factors"),
    "coalesced_encoding": _fixed(
        "Gluon placeholder: gluon-infer-coalesced-encodings replaces it with a coalesced blocked layout"
    ),
    "auto_encoding": _fixed(
        "Gluon placeholder: gluon-resolve-auto-encodings infers the layout from the tensor's uses"
    ),
}


def _old_shared_summary(kind: str, context: Context) -> str:
    if "swizzlingByteWidth" in context.params:
        return _nvmma_summary(kind, context)
    return _swizzled_summary(kind, context)


SUMMARIES["shared"] = _old_shared_summary  # before the swizzled/nvmma split (3.1 to 3.2)
