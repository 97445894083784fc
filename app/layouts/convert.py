"""One entry point: encoding (text or parsed) + shape -> LinearLayout, dispatched by kind."""

from __future__ import annotations

from app.layouts import amd, distributed, mma, shared, tmem
from app.layouts.errors import LayoutError
from app.layouts.linear import LinearLayout
from app.layouts.parse import Encoding, parse_encoding

SHARED_KINDS = {"ttg.swizzled_shared", "ttg.amd_rotating_shared", "ttg.nvmma_shared", "ttg.padded_shared",
                "ttg.shared_linear", "ttg.shared"}
TENSOR_MEMORY_KINDS = {"ttng.tensor_memory_encoding"}
DRAWN_KINDS = {"ttg.blocked", "ttg.slice", "ttg.linear", "ttg.nvidia_mma", "ttg.amd_mfma", "ttg.amd_wmma",
               "ttg.dot_op"} | SHARED_KINDS | TENSOR_MEMORY_KINDS


def is_shared(enc: Encoding) -> bool:
    return enc.kind in SHARED_KINDS


def to_linear_layout(enc: Encoding | str, shape: list[int]) -> LinearLayout:
    if isinstance(enc, str):
        enc = parse_encoding(enc)
    p = enc.params
    kind = enc.kind
    if kind == "ttg.blocked":
        return distributed.blocked(p, shape)
    if kind == "ttg.slice":
        return distributed.slice_(p, shape, _parent_ll)
    if kind == "ttg.linear":
        return distributed.linear(p, shape)
    if kind == "ttg.nvidia_mma":
        return mma.nvidia_mma(p, shape)
    if kind == "ttg.amd_mfma":
        return amd.mfma(p, shape)
    if kind == "ttg.amd_wmma":
        return amd.wmma(p, shape)
    if kind == "ttg.dot_op":
        return _dot_op(p, shape)
    if kind == "ttg.swizzled_shared":
        return shared.swizzled(p, shape)
    if kind == "ttg.amd_rotating_shared":
        return shared.swizzled(p, shape, rotating=True)
    if kind == "ttg.shared":
        return shared.legacy_shared(p, shape)
    if kind == "ttg.nvmma_shared":
        return shared.nvmma(p, shape)
    if kind == "ttg.shared_linear":
        return shared.shared_linear(p, shape)
    if kind == "ttg.padded_shared":
        raise LayoutError("padded_shared has no plain linear layout (padding is added on top): use padded_parts")
    if kind in TENSOR_MEMORY_KINDS:
        return tmem.tensor_memory(p, shape)
    raise LayoutError(f"{kind} layouts are not drawn here")


def _parent_ll(parent, shape: list[int]) -> LinearLayout:
    if not isinstance(parent, Encoding):
        raise LayoutError("parent is not an encoding (expand aliases first)")
    return to_linear_layout(parent, shape)


def _dot_op(p: dict, shape: list[int]) -> LinearLayout:
    parent, op_idx, kwidth = p.get("parent"), p.get("opIdx"), p.get("kWidth", 0)
    if not isinstance(parent, Encoding) or op_idx not in (0, 1) or not isinstance(kwidth, int):
        raise LayoutError("dot_op needs opIdx 0 or 1 and a parent encoding")
    if parent.kind == "ttg.blocked":
        return distributed.fma_dot(op_idx, parent.params, shape)
    if parent.kind == "ttg.nvidia_mma":
        return mma.nvidia_dot(op_idx, kwidth, parent.params, shape)
    if parent.kind == "ttg.amd_mfma":
        return amd.mfma_dot(op_idx, kwidth, parent.params, shape)
    if parent.kind == "ttg.amd_wmma":
        return amd.wmma_dot(op_idx, kwidth, parent.params, shape)
    raise LayoutError(f"dot_op of a {parent.kind} parent is not drawn here")
