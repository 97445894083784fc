"""Who holds each element: a linear layout turned into per-element owners (distributed),
offsets (shared) or TMEM cells, row-major, as /-/layout.json answers them."""

from __future__ import annotations

from app.layouts.convert import SHARED_KINDS, TENSOR_MEMORY_KINDS, to_linear_layout
from app.layouts.elements import DTYPE_BITS, element_bits
from app.layouts.errors import LayoutError
from app.layouts.linear import LinearLayout
from app.layouts.parse import Encoding, parse_encoding
from app.layouts.shared import padded_offset, padded_parts

MAX_ELEMENTS = 1 << 18  # owners of 256K elements is ~5 MB of JSON; a bigger answer helps nobody
MAX_SLOTS = 1 << 21  # hardware slots (registers x lanes x warps x blocks) we are willing to walk


def _flat(ll: LinearLayout, basis: list[int]) -> int:
    """A coordinate as its row-major index. Sizes are powers of two, so XOR of coordinates is XOR of
    indices: each in-dim's table of indices can be built once and combined with ^."""
    idx = 0
    for (name, size), v in zip(ll.outs, basis):
        idx = idx * size + v
    return idx


def _table(ll: LinearLayout, in_dim: str) -> list[int]:
    bases = [_flat(ll, b) for b in ll.in_bases(in_dim)]
    table = [0]
    for b in bases:
        table += [t ^ b for t in table]
    return table


def _elements(shape: list[int]) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def dtype_bits(dtype: str) -> int:
    """Bits of one element: the form's shorthands (DTYPE_BITS) or any IR element type
    (app/layouts/elements.py: ``!tt.ptr<...>`` is 64, ``i1`` 8)."""
    if dtype in DTYPE_BITS:
        return DTYPE_BITS[dtype]
    try:
        return element_bits(dtype)
    except LayoutError:
        raise LayoutError(f"unknown dtype {dtype!r} (one of {', '.join(sorted(DTYPE_BITS))}, or an IR element "
                          f"type such as !tt.ptr<f16> or f8E4M3FN)") from None


def layout_kind(enc: Encoding) -> str:
    if enc.kind in SHARED_KINDS:
        return "shared"
    if enc.kind in TENSOR_MEMORY_KINDS:
        return "tensor_memory"
    return "distributed"


def describe(attr: str | Encoding, shape: list[int], dtype: str = "f16") -> dict:
    """The /-/layout.json answer (without the conversion part)."""
    enc = parse_encoding(attr) if isinstance(attr, str) else attr
    n = _elements(shape)
    if n > MAX_ELEMENTS:
        raise LayoutError(f"{n} elements is more than the {MAX_ELEMENTS} this page lays out")
    kind = layout_kind(enc)
    out: dict = {"kind": kind, "encoding": enc.kind, "attr": enc.text, "shape": list(shape)}
    if enc.kind == "ttg.padded_shared":
        out.update(_padded(enc, shape, dtype))
        return out
    ll = to_linear_layout(enc, shape)
    if ll.total_in_bits() > MAX_SLOTS.bit_length() - 1:
        raise LayoutError("this layout has more hardware slots than this page walks")
    out["bases"] = {k: v for k, v in ll.bases.items()}
    if kind == "distributed":
        out.update(_owners(ll, n))
    elif kind == "shared":
        out.update(_offsets(ll, n, dtype))
    else:
        out.update(_tmem(ll, n))
    return out


def _owners(ll: LinearLayout, n: int) -> dict:
    regs, lanes, warps, blocks = (_table(ll, d) for d in ("register", "lane", "warp", "block"))
    tpw = len(lanes)
    owners: list[list[list[int]]] = [[] for _ in range(n)]
    multi_block = len(blocks) > 1
    for b, bv in enumerate(blocks):
        for w, wv in enumerate(warps):
            for ln, lv in enumerate(lanes):
                base = bv ^ wv ^ lv
                thread = w * tpw + ln
                for r, rv in enumerate(regs):
                    owners[base ^ rv].append([thread, r, b] if multi_block else [thread, r])
    return {"threads_per_warp": tpw, "warps": len(warps), "blocks": len(blocks), "registers": len(regs),
            "owners": owners}


def _banks(offsets: list[int], dtype: str) -> list[int]:
    """32 banks of 4 bytes: the bank of an element's first byte."""
    nbytes = dtype_bits(dtype) // 8
    return [(o * nbytes // 4) % 32 for o in offsets]


def _offsets(ll: LinearLayout, n: int, dtype: str) -> dict:
    offs, blocks = _table(ll, "offset"), _table(ll, "block")
    offsets = [-1] * n
    block_of = [0] * n
    for b, bv in enumerate(blocks):
        for o, ov in enumerate(offs):
            e = ov ^ bv
            if offsets[e] < 0:
                offsets[e], block_of[e] = o, b
    if min(offsets) < 0:
        raise LayoutError("this shared layout leaves elements without an offset")
    out = {"dtype": dtype, "offsets": offsets, "banks": _banks(offsets, dtype), "blocks": len(blocks)}
    if len(blocks) > 1:
        out["block_of"] = block_of
    return out


def _padded(enc: Encoding, shape: list[int], dtype: str) -> dict:
    pairs, ll = padded_parts(enc.params)
    own = [size for _, size in ll.outs]
    if list(shape) != own:
        raise LayoutError(f"this padded_shared layout is laid out for shape {'x'.join(map(str, own))}")
    n = _elements(shape)
    offs = _table(ll, "offset")
    offsets = [-1] * n
    for o, e in enumerate(offs):
        if offsets[e] < 0:
            offsets[e] = padded_offset(pairs, o)
    if min(offsets) < 0:
        raise LayoutError("this padded layout leaves elements without an offset")
    return {"dtype": dtype, "offsets": offsets, "banks": _banks(offsets, dtype), "blocks": 1, "padding": pairs,
            "bases": {"offset": ll.in_bases("offset"), "block": ll.in_bases("block")}}


def _tmem(ll: LinearLayout, n: int) -> dict:
    rows, cols, blocks = _table(ll, "row"), _table(ll, "col"), _table(ll, "block")
    cells: list[list[list[int]]] = [[] for _ in range(n)]
    multi_block = len(blocks) > 1
    for b, bv in enumerate(blocks):
        for r, rv in enumerate(rows):
            for c, cv in enumerate(cols):
                cells[bv ^ rv ^ cv].append([r, c, b] if multi_block else [r, c])
    return {"cells": cells, "blocks": len(blocks)}
