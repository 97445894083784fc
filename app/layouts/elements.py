"""Element types as a layout conversion sees them: how many bits one element takes in shared memory.

Triton 3.9's lowering of a convert_layout through shared memory (ConvertLayoutOpToLLVM.cpp,
transferWithinBlockSwizzlingImpl) stores a pointer as a 64-bit integer (ptrtoint) and widens a
sub-byte element (i1, f4) to i8; every other element keeps its bit width. Scratch sizes
(Allocation.cpp) follow the same widths. Checked against Triton's own compiles in
tests/layout_cases/triton39_cvt_reference.json (pointer, i1 and 64-bit rows).
"""

from __future__ import annotations

import re

from app.layouts.errors import LayoutError

# What the layout inspector's form offers (a few shorthands beside the IR's own spellings).
DTYPE_BITS = {"i1": 8, "i8": 8, "u8": 8, "f8": 8, "f8e4m3": 8, "f8e5m2": 8, "fp8": 8, "i16": 16, "f16": 16,
              "bf16": 16, "i32": 32, "f32": 32, "tf32": 32, "i64": 64, "f64": 64}

POINTER_BITS = 64  # Triton's kPtrBitWidth: a !tt.ptr element is moved as an i64
_INT = re.compile(r"[su]?i(\d+)$")
_FLOAT = re.compile(r"f(\d+)(?:E\d+M\d+[A-Z]*)?$")  # f16, f32, f64, f8E4M3FN, f8E5M2FNUZ, f4E2M1FN, f6E3M2FN


def element_bits(element_type: str) -> int:
    """Bits one element of this type takes in a conversion's scratch: ``!tt.ptr<...>`` 64, ``i1``
    (and other sub-byte types) 8, otherwise the type's width. ``element_type`` is written as in the
    IR (``f16``, ``bf16``, ``i1``, ``f8E4M3FN``, ``!tt.ptr<f16>``); a missing or unknown type raises
    LayoutError: the cost depends on it, so it is never guessed."""
    if not isinstance(element_type, str) or not element_type.strip():
        raise LayoutError("the element type is required (as written in the IR: f16, bf16, i1, f8E4M3FN, "
                          "!tt.ptr<f16>, ...): a conversion's cost depends on it")
    t = element_type.strip()
    if t.startswith("!tt.ptr<") and t.endswith(">"):
        return POINTER_BITS
    if t in DTYPE_BITS:
        return DTYPE_BITS[t]
    if t == "bf16":
        return 16
    if t == "index":
        return 64
    m = _INT.fullmatch(t) or _FLOAT.fullmatch(t)
    if m and int(m.group(1)) > 0:
        return max(int(m.group(1)), 8)
    raise LayoutError(f"unknown element type {t!r} (expected an IR element type such as f16, bf16, f32, i1, i8, "
                      f"f8E4M3FN or !tt.ptr<f16>)")
