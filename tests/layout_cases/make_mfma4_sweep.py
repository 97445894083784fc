"""A wider gfx950 reference for amd_mfma version 4 <-> blocked: the parameters the first sweep
(make_cvt_reference.py's "mfma4-blocked 128x16") held fixed, varied, lowered by Triton 3.9.0.

Run under the Triton 3.9.0 venv from the repository root (no GPU; about 5 minutes on 2 busy cores):

    /work/venvs/t39/bin/python tests/layout_cases/make_mfma4_sweep.py tests/layout_cases/triton39_mfma4_sweep.json

Varied: num_warps 1, 2, 4, 8 (every warpsPerCTA split on both sides); instrShape [16, 16, 32],
[32, 32, 16], [16, 16, 16], [32, 32, 8], and [16, 16, 4] with elementBitWidth = 64 (f64); isTransposed;
tilesPerWarp [2, 1], [1, 2], [2, 2]; blocked sizePerThread 1..16 per dim, threadsPerWarp 64x1 .. 1x64,
both orders; shapes 128x16 and 16x128; element types i8, f8E4M3FN, f8E5M2, f16, bf16, f32 (f64 for
the 64-bit mfma); both directions; slices of both parents to 128 (the reductions' conversions).

Beside the drawn pairs, family "gfx950 matmul dumps": every distinct convert_layout involving an
amd_mfma layout in any pass of real gfx950 matmul compilations (`MLIR_ENABLE_DUMP=1`, tl.dot at
128x16x32, 16x128x32, 128x16x16, 16x128x64; f16, bf16, f8E4M3FN, f8E5M2, i8, f32 operands; 4 and 8
warps; a plain, a row-sum and a transposed epilogue), as irlens's snapshot scanner reads them.

Shuffles are rare among random pairs (1 in 100), so pairs are drawn at random (fixed seed) into three
buckets by where the data must go -- irlens's layout algebra only sorts the draws, the answer recorded
is Triton's: "within a warp" (no warp crossing: where the shuffle/shared decision is made),
"shuffles" (irlens expects shuffles) and "across warps". Each row is compiled by
make_cvt_reference.py's worker (a Gluon kernel, convert_layout, read off the LLVM IR) and read by
tests/test_layout_reference.py.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(Path(__file__).parent)]

import make_cvt_reference as ref

from app.layouts.conversion import conversion_kind, minimal_dims
from app.layouts.convert import to_linear_layout

WARPS = {1: [[1, 1]], 2: [[2, 1], [1, 2]], 4: [[4, 1], [2, 2], [1, 4]], 8: [[8, 1], [4, 2], [2, 4], [1, 8]]}
TPW = [[64, 1], [32, 2], [16, 4], [8, 8], [4, 16], [2, 32], [1, 64]]
INSTR = [([16, 16, 32], ""), ([32, 32, 16], ""), ([16, 16, 16], ""), ([32, 32, 8], ""),
         ([16, 16, 4], ", elementBitWidth = 64")]
TILES = ["", "", ", tilesPerWarp = [2, 1]", ", tilesPerWarp = [1, 2]", ", tilesPerWarp = [2, 2]"]
PER_BUCKET = {"within a warp": 220, "shuffles": 90, "across warps": 50}


def mfma(rng, nw):
    instr, bits = rng.choice(INSTR)
    return (f"#ttg.amd_mfma<{{version = 4, warpsPerCTA = {rng.choice(WARPS[nw])}, instrShape = {instr}, "
            f"isTransposed = {rng.choice(['true', 'false'])}{rng.choice(TILES)}{bits}}}>")


def draw(rng):
    nw = rng.choice([1, 2, 4, 4, 8, 8])
    src = mfma(rng, nw)
    dst = ref.blocked([rng.choice([1, 2, 4, 8, 16]), rng.choice([1, 2, 4, 8, 16])], rng.choice(TPW),
                      rng.choice(WARPS[nw]), rng.choice([[1, 0], [0, 1]]))
    shape = rng.choice([[128, 16], [16, 128]])
    if rng.random() < 0.1:  # a reduction's slice to the long dim, against a 1-D blocked layout
        dim = 1 if shape[0] == 128 else 0
        src, dst, shape = ref.sliced(dim, src), ref.blocked([rng.choice([1, 2, 4])], [64], [nw], [0]), [128]
    if rng.random() < 0.5:
        src, dst = dst, src
    dtype = "f64" if "elementBitWidth = 64" in src + dst else rng.choice(["i8", "f8E4M3FN", "f8E5M2", "f16",
                                                                          "bf16", "f32"])
    return ref.case("mfma4 sweep", src, dst, shape, dtype, "hip:gfx950", num_warps=nw)


def _matmul_kernel():
    import triton
    import triton.language as tl

    @triton.jit
    def mm(a_ptr, b_ptr, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, EPI: tl.constexpr):
        rm, rn, rk = tl.arange(0, BM), tl.arange(0, BN), tl.arange(0, BK)
        acc = tl.zeros((BM, BN), dtype=tl.float32 if a_ptr.dtype.element_ty != tl.int8 else tl.int32)
        for k in range(0, K, BK):
            a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
            b = tl.load(b_ptr + (k + rk)[:, None] * BN + rn[None, :])
            acc += tl.dot(a, b)
        if EPI == 1:
            tl.store(c_ptr + rm, tl.sum(acc, axis=1).to(c_ptr.dtype.element_ty))
        elif EPI == 2:
            tl.store(c_ptr + rn[:, None] * BM + rm[None, :], tl.trans(acc).to(c_ptr.dtype.element_ty))
        else:
            tl.store(c_ptr + rm[:, None] * BN + rn[None, :], acc.to(c_ptr.dtype.element_ty))
    return mm


def compile_matmuls():
    """(run with MLIR_ENABLE_DUMP=1: the dump goes to stderr)"""
    import itertools

    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    mm = _matmul_kernel()
    types = [("*fp16", "*fp16"), ("*bf16", "*fp32"), ("*fp8e4nv", "*fp16"), ("*i8", "*i32"), ("*fp32", "*fp32"),
             ("*fp8e5", "*bf16")]
    for (bm, bn, bk), (a, c), nw, epi in itertools.product(
            [(128, 16, 32), (16, 128, 32), (128, 16, 16), (16, 128, 64)], types, [4, 8], [0, 1, 2]):
        sig = {"a_ptr": a, "b_ptr": a, "c_ptr": c, "K": "i32", "BM": "constexpr", "BN": "constexpr",
               "BK": "constexpr", "EPI": "constexpr"}
        triton.compile(ASTSource(mm, sig, {"BM": bm, "BN": bn, "BK": bk, "EPI": epi}),
                       target=GPUTarget("hip", "gfx950", 64), options={"num_warps": nw})


def dump_cases():
    """Every distinct conversion touching amd_mfma in the matmuls' pass-by-pass dump."""
    import io
    import os
    import re
    import subprocess
    import tempfile

    from app.layouts.cvt_costs import convert_costs
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "MLIR_ENABLE_DUMP": "1", "TRITON_CACHE_DIR": tmp, "TRITON_ALWAYS_COMPILE": "1"}
        log = os.path.join(tmp, "dump.log")
        with open(log, "w") as err:
            subprocess.run([sys.executable, __file__, "--matmuls"], env=env, stderr=err, check=True)
        out, seen, chunk = [], set(), []

        def take():
            text = "".join(chunk)
            if "amd_mfma" not in text or "convert_layout" not in text:
                return
            m = re.search(r'"ttg.num-warps" = (\d+)', text)
            for c in convert_costs(io.StringIO(text)):
                item = ref.case("gfx950 matmul dumps", c["src"], c["dst"], c["shape"], c["dtype"], "hip:gfx950",
                                num_warps=int(m.group(1)) if m else 4)
                key = json.dumps(item, sort_keys=True)
                if "amd_mfma" in c["src"] + c["dst"] and key not in seen:
                    seen.add(key)
                    out.append(item)

        with open(log, errors="replace") as f:
            for line in f:
                if "IR Dump" in line:
                    take()
                    chunk = []
                else:
                    chunk.append(line)
        take()
    return out


def bucket(item):
    try:
        s, d = to_linear_layout(item["src"], item["shape"]), to_linear_layout(item["dst"], item["shape"])
    except Exception:  # noqa: BLE001 -- a pair irlens cannot draw: not part of this sweep
        return None
    if "warp" in minimal_dims(s, d):
        return "across warps"
    kind = conversion_kind(s, d)
    return "shuffles" if kind == "shuffles" else "within a warp" if kind == "shared" else None


def main():
    import triton
    rng = random.Random(3309)
    items, counts, seen = [], dict.fromkeys(PER_BUCKET, 0), set()
    while any(counts[b] < n for b, n in PER_BUCKET.items()):
        item = draw(rng)
        key = json.dumps(item, sort_keys=True)
        b = bucket(item)
        if b is None or key in seen or counts[b] >= PER_BUCKET[b]:
            continue
        seen.add(key)
        counts[b] += 1
        items.append({**item, "family": f"mfma4 sweep: {b}"})
    items += dump_cases()
    results = ref.run(items)
    kept = [r for r in results if "error" not in r]
    with open(sys.argv[1], "w") as f:
        json.dump({"triton": triton.__version__, "made_by": "tests/layout_cases/make_mfma4_sweep.py",
                   "refused": len(results) - len(kept), "cases": kept}, f, indent=1)
        f.write("\n")
    print(len(kept), "cases,", len(results) - len(kept), "refused by Triton", file=sys.stderr)


if __name__ == "__main__":
    if sys.argv[1:] == ["--matmuls"]:
        compile_matmuls()
    else:
        main()
