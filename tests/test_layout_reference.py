"""irlens's cost of a convert_layout against Triton 3.9's own lowering, on a held-out reference.

tests/layout_cases/triton39_cvt_reference.json was made by tests/layout_cases/make_cvt_reference.py
(Triton 3.9.0 from pip, no GPU): each row is a Gluon kernel compiled for its target, with what the
LLVM IR showed (shared memory, shuffles, or neither) and the scratch Triton reserved. Reading the
committed file, this test needs no Triton.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from app.layouts.conversion import conversion
from app.layouts.cvt_costs import convert_costs

REFERENCE = Path(__file__).parent / "layout_cases" / "triton39_cvt_reference.json"
BITS = {"i1": 8, "i8": 8, "f16": 16, "bf16": 16, "f32": 32, "i32": 32, "f64": 64, "i64": 64}


def reference() -> list[dict]:
    with open(REFERENCE) as f:
        data = json.load(f)
    assert data["triton"] == "3.9.0"
    return data["cases"]


def _kind(cost: dict) -> str:
    return "none" if cost["kind"] in ("none", "registers") else cost["kind"]


def _bits(dtype: str) -> int:
    return 64 if dtype.startswith("!tt.ptr") else BITS[dtype]


def test_every_reference_conversion_is_costed_as_triton_lowers_it():
    wrong = []
    for row in reference():
        cost = conversion(row["src"], row["dst"], row["shape"], _bits(row["dtype"]), row["target"])
        if _kind(cost) != row["triton_kind"] or cost["scratch_bytes"] != row["scratch_bytes"]:
            wrong.append((row["family"], row["target"], row["shape"], row["dtype"], row["triton_kind"],
                          row["scratch_bytes"], cost["kind"], cost["scratch_bytes"]))
        if cost["kind"] == "shared":
            assert cost["scratch_bytes"] <= cost["scratch_bytes_at_most"]
    assert not wrong, "\n".join(map(str, wrong))


def test_the_reference_covers_the_families_of_issue_25():
    rows = reference()
    seen = Counter((r["family"], r["target"], r["triton_kind"]) for r in rows)
    # the three families irlens called shared memory, and Triton lowers with shuffles
    assert seen["nvidia lane order", "cuda:80", "shuffles"] >= 4
    assert seen["amd blocked-slice tiny", "hip:gfx942", "shuffles"] >= 8
    assert seen["amd blocked-slice tiny", "hip:gfx950", "shuffles"] >= 8
    assert seen["mfma-blocked", "hip:gfx950", "shuffles"] >= 8
    # ... beside conversions that do go through shared memory, on every target
    for target in ("cuda:80", "cuda:90", "hip:gfx942", "hip:gfx950"):
        assert sum(n for (_f, t, k), n in seen.items() if t == target and k == "shared") >= 3, target
    dtypes = {r["dtype"] for r in rows if r["triton_kind"] == "shared"}
    assert {"!tt.ptr<f16>", "!tt.ptr<bf16>", "i1", "f64", "i8"} <= dtypes
    assert any(op.startswith("llvm.amdgcn.permlane") for r in rows for op in r["shuffle_ops"])
    assert len(rows) >= 100


def test_an_op_forced_to_shuffles_is_read():
    """ttg.convert_layout %x {force_warp_shuffle} (Triton 3.9's attribute) lowers with shuffles."""
    row = next(r for r in reference() if r["triton_kind"] == "shared" and r["target"] == "cuda:90")
    dims = "x".join(map(str, row["shape"]))
    line = (f"  %1 = ttg.convert_layout %0 {{force_warp_shuffle}} : tensor<{dims}xf16, {row['src']}> -> "
            f"tensor<{dims}xf16, {row['dst']}>")
    (cost,) = convert_costs(['module attributes {ttg.target = "cuda:90"} {', line, "}"])
    assert cost["kind"] == "shuffles" and cost["scratch_bytes"] == 0
