"""Held-out reference for convert_layout costs: what Triton 3.9.0's own lowering does, per target.

Run under a venv with Triton 3.9.0 from pip (no GPU needed; the project's venv pins another Triton):

    python3 -m venv /tmp/t39/.venv && /tmp/t39/.venv/bin/pip install triton==3.9.0
    /tmp/t39/.venv/bin/python tests/layout_cases/make_cvt_reference.py tests/layout_cases/triton39_cvt_reference.json

Each case is a tiny Gluon kernel that makes a tensor in the source layout, converts it with
ttgl.convert_layout and uses it in the destination layout; triton.compile lowers it for the case's
GPUTarget in a worker process (a time limit per compile; a compile that aborts costs that case only).
What the lowering chose is read off its LLVM IR:

- "shared": the IR touches shared memory (addrspace(3)) -- a round trip through shared memory; its
  scratch is kernel.metadata.shared (the kernel allocates nothing else);
- "shuffles": llvm.nvvm.shfl.sync / ds_bpermute / permlane / dpp and no shared memory;
- "none": neither (the values only move between registers, or not at all).

The element type is part of the case: numbers are loaded and stored; a `!tt.ptr<...>` tensor is the
address tensor itself (converted, then loaded from); an `i1` tensor is a comparison's result.
Each case's "family" says why it is here (see CASES below). The output is committed and read by
tests/test_layout_reference.py, which does not need Triton.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile

TIMEOUT = 180

# -- the cases -----------------------------------------------------------------------------------


def blocked(spt, tpw, wpc, order):
    return (f"#ttg.blocked<{{sizePerThread = {list(spt)}, threadsPerWarp = {list(tpw)}, "
            f"warpsPerCTA = {list(wpc)}, order = {list(order)}}}>")


def sliced(dim, parent):
    return f"#ttg.slice<{{dim = {dim}, parent = {parent}}}>"


def mfma(version, warps, instr, transposed=True):
    return (f"#ttg.amd_mfma<{{version = {version}, warpsPerCTA = {list(warps)}, instrShape = {list(instr)}, "
            f"isTransposed = {'true' if transposed else 'false'}}}>")


def mma2(warps):
    return f"#ttg.nvidia_mma<{{versionMajor = 2, versionMinor = 0, warpsPerCTA = {list(warps)}, instrShape = [16, 8]}}>"


def mma3(warps, n=64):
    return (f"#ttg.nvidia_mma<{{versionMajor = 3, versionMinor = 0, warpsPerCTA = {list(warps)}, "
            f"instrShape = [16, {n}, 16]}}>")


def case(family, src, dst, shape, dtype, target, num_warps=4, num_ctas=1):
    tpw = 64 if target.startswith("hip:gfx9") else 32
    out = {"family": family, "src": src, "dst": dst, "shape": list(shape), "dtype": dtype, "target": target,
           "num_warps": num_warps, "threads_per_warp": tpw}
    if num_ctas > 1:
        out["num_ctas"] = num_ctas
    return out


def lane_orders():
    """NVIDIA blocked -> blocked whose lanes are only reordered (the other lane order, or threads
    split otherwise over the dims): the data stays in the warp, no register trades places with a lane."""
    out = []
    pairs = [
        (blocked([1, 1], [4, 8], [4, 1], [1, 0]), blocked([1, 1], [4, 8], [4, 1], [0, 1]), [16, 8]),
        (blocked([1, 4], [4, 8], [4, 1], [1, 0]), blocked([1, 4], [4, 8], [4, 1], [0, 1]), [16, 32]),
        (blocked([2, 2], [8, 4], [2, 2], [1, 0]), blocked([2, 2], [8, 4], [2, 2], [0, 1]), [32, 16]),
        (blocked([1, 1], [8, 4], [1, 4], [0, 1]), blocked([1, 1], [8, 4], [1, 4], [1, 0]), [8, 16]),
        (blocked([4, 1], [2, 16], [1, 4], [0, 1]), blocked([4, 1], [2, 16], [1, 4], [1, 0]), [8, 64]),
    ]
    for i, (s, d, shape) in enumerate(pairs):
        for target in ("cuda:80", "cuda:90"):
            out.append(case("nvidia lane order", s, d, shape, ("f16", "f32", "i8", "bf16", "f32")[i], target))
    # the same lane permutation with more data per thread than the layout's tile (registers repeat)
    out.append(case("nvidia lane order", blocked([1, 1], [4, 8], [4, 1], [1, 0]),
                    blocked([1, 1], [4, 8], [4, 1], [0, 1]), [64, 32], "f16", "cuda:80"))
    return out


def amd_slices():
    """AMD blocked <-> slice at tiny shapes: most lanes and warps hold copies (broadcast)."""
    out = []
    one = blocked([1], [64], [4], [0])
    for shape in ([2], [4], [8], [16], [64]):
        for par, dim in ((blocked([1, 1], [8, 8], [4, 1], [1, 0]), 1), (blocked([1, 1], [1, 64], [1, 4], [1, 0]), 0),
                         (blocked([1, 4], [16, 4], [4, 1], [1, 0]), 1)):
            for target in ("hip:gfx942", "hip:gfx950"):
                out.append(case("amd blocked-slice tiny", one, sliced(dim, par), shape,
                                ("f32", "f16", "i32")[len(out) % 3], target))
    out.append(case("amd blocked-slice tiny", sliced(1, blocked([1, 1], [8, 8], [4, 1], [1, 0])), one, [4], "f32",
                    "hip:gfx942"))
    out.append(case("amd blocked-slice tiny", sliced(0, blocked([1, 1], [1, 64], [1, 4], [1, 0])), one, [8], "f32",
                    "hip:gfx950"))
    return out


def mfma_blocked():
    """AMD mfma -> blocked (the epilogue's conversion) on gfx950 (which has permlane swaps) and gfx942:
    blocked layouts that keep each warp's data in the warp (register/lane swaps, lanes reordered, a
    warp that holds a copy), and ones that move data across warps."""
    out = []
    m32, m32n = mfma(4, [4, 1], [32, 32, 16]), mfma(4, [1, 4], [32, 32, 16], False)
    m16 = mfma(4, [2, 2], [16, 16, 32])
    pairs = [
        (m32, blocked([1, 1], [32, 2], [4, 1], [1, 0]), [128, 32]),
        (m32, blocked([1, 4], [32, 2], [4, 1], [1, 0]), [128, 32]),
        (m32, blocked([1, 1], [64, 1], [4, 1], [1, 0]), [32, 128]),
        (m32, blocked([1, 2], [16, 4], [4, 1], [1, 0]), [32, 128]),
        (m32, blocked([1, 4], [64, 1], [2, 2], [1, 0]), [32, 128]),
        (m32n, blocked([1, 1], [1, 64], [1, 4], [1, 0]), [128, 32]),
        (m32n, blocked([1, 1], [2, 32], [1, 4], [1, 0]), [128, 32]),
        (m32n, blocked([4, 1], [2, 32], [1, 4], [0, 1]), [128, 32]),
        (m16, blocked([1, 4], [16, 4], [2, 2], [1, 0]), [128, 32]),
        # across warps
        (m32, blocked([1, 4], [8, 8], [4, 1], [1, 0]), [64, 64]),
        (m16, blocked([4, 4], [16, 4], [1, 4], [1, 0]), [128, 128]),
        (m32n, blocked([1, 8], [8, 8], [4, 1], [1, 0]), [128, 128]),
    ]
    for i, (src, dst, shape) in enumerate(pairs):
        for target in ("hip:gfx942", "hip:gfx950"):
            version = 3 if target == "hip:gfx942" else 4
            out.append(case("mfma-blocked", src.replace("version = 4", f"version = {version}"), dst, shape,
                            ("f16", "f32", "bf16")[i % 3], target))
    return out


def through_shared():
    """Conversions across warps: a round trip through shared memory on every target."""
    out = []
    a, b = blocked([1, 4], [4, 8], [4, 1], [1, 0]), blocked([4, 1], [8, 4], [1, 4], [0, 1])
    for target in ("cuda:80", "cuda:90"):
        out.append(case("through shared", a, b, [64, 64], "f16", target))
        out.append(case("through shared", b, a, [128, 32], "f32", target))
        out.append(case("through shared", mma2([2, 2]), blocked([1, 8], [4, 8], [4, 1], [1, 0]), [64, 64], "f16",
                        target))
    out.append(case("through shared", mma3([4, 1]), blocked([1, 8], [4, 8], [4, 1], [1, 0]), [64, 64], "bf16",
                    "cuda:90"))
    amd_a, amd_b = blocked([1, 4], [4, 16], [4, 1], [1, 0]), blocked([4, 1], [16, 4], [1, 4], [0, 1])
    for target in ("hip:gfx942", "hip:gfx950"):
        out.append(case("through shared", amd_a, amd_b, [64, 64], "f16", target))
        out.append(case("through shared", amd_b, amd_a, [128, 64], "f32", target))
    # within a warp but too many register/lane swaps for shuffles
    out.append(case("through shared", blocked([4, 4], [8, 4], [1, 4], [1, 0]), blocked([4, 4], [4, 8], [1, 4], [0, 1]),
                    [32, 64], "f16", "cuda:90"))
    return out


def linear(reg, lane, warp, block=()):
    def f(vs):
        return "[" + ", ".join(f"[{a}, {b}]" for a, b in vs) + "]"
    return f"#ttg.linear<{{register = {f(reg)}, lane = {f(lane)}, warp = {f(warp)}, block = {f(block)}}}>"


def warp_copies():
    """The source holds copies in every warp (or CTA): the destination's warps can pick their part out
    of their own copy with shuffles, the source lane depending on the warp -- unless a warp's part
    sits in other registers of the copy. And register/lane swaps counted from either side."""
    z = (0, 0)
    out = [
        case("warp copies", linear([], [(2, 0), (0, 8), (1, 0), (0, 2), (0, 1), (0, 4)], [z, z]),
             linear([], [z, (0, 8), (1, 0), (0, 2), (2, 0), (0, 4)], [(0, 1), z]), [4, 16], "f32", "hip:gfx942"),
        case("warp copies", linear([(0, 4), (1, 0), (8, 0), (16, 0)], [(2, 0), (0, 1), (0, 2), (0, 8), (4, 0)], [z, z]),
             linear([(0, 1), (1, 0), (8, 0), (16, 0)], [(0, 4), (0, 8), (0, 2), (2, 0), z], [z, (4, 0)]), [32, 16],
             "f32", "cuda:80"),
        case("warp copies", linear([(1, 0), (4, 0), (0, 2)], [(0, 8), (0, 4), (2, 0), (0, 1), (8, 0)], [z, z]),
             linear([(1, 0), (4, 0), z], [(0, 8), (0, 4), (2, 0), z, (8, 0)], [(0, 2), (0, 1)]), [16, 16], "f32",
             "cuda:80"),
        case("warp copies", linear([(2, 0), (0, 1), (8, 0), (0, 4)], [(4, 0), z, (1, 0), (0, 8), (0, 2)], [z, z]),
             linear([(1, 0), (4, 0), (8, 0), z], [(0, 1), z, (2, 0), (0, 8), (0, 4)], [(0, 2), z]), [16, 16], "f32",
             "cuda:90"),
        case("warp copies", linear([], [(1, 0), (0, 4), (2, 0), (0, 1), (0, 2)], [z, (0, 8)], [z]),
             linear([], [(1, 0), (0, 1), z, (0, 4), (0, 2)], [(2, 0), (0, 8)], [z]), [4, 16], "bf16", "cuda:90",
             num_ctas=2),
        case("warp copies", linear([(0, 4), (4, 0), (32, 0)], [(2, 0), (8, 0), (0, 2), (0, 1), (1, 0)],
                                   [(16, 0), (0, 8)], [z]),
             linear([(0, 4), (4, 0), (32, 0)], [(2, 0), (8, 0), (0, 2), z, (1, 0)], [(16, 0), (0, 8)], [(0, 1)]),
             [64, 16], "!tt.ptr<f16>", "cuda:90", num_ctas=2),
        case("warp copies", linear([(2, 0)], [(0, 1), (1, 0), (0, 2), (0, 4), z], [z, (0, 8)], [z]),
             linear([z], [(0, 1), z, (0, 2), (0, 4), z], [(1, 0), (0, 8)], [(2, 0)]), [4, 16], "f32", "cuda:90",
             num_ctas=2),
        # the destination's registers take two of the source's lanes (no register goes the other way)
        case("warp copies", linear([], [(0, 1), (0, 2), (0, 4), (0, 8), (0, 16)], [(1, 0), (2, 0)]),
             linear([(0, 1), (0, 2)], [z, z, (0, 4), (0, 8), (0, 16)], [(1, 0), (2, 0)]), [4, 32], "f16", "cuda:90"),
        case("warp copies", linear([(0, 1)], [z, (0, 2), (0, 4), (0, 8), (0, 16)], [(1, 0), (2, 0)]),
             linear([(0, 1), (0, 2)], [z, z, (0, 4), (0, 8), (0, 16)], [(1, 0), (2, 0)]), [4, 32], "f16", "cuda:80"),
        # the source's registers go to two destination lanes
        case("warp copies", linear([(0, 1), (0, 2)], [z, z, (0, 4), (0, 8), (0, 16)], [(1, 0), (2, 0)]),
             linear([], [(0, 1), (0, 2), (0, 4), (0, 8), (0, 16)], [(1, 0), (2, 0)]), [4, 32], "f32", "cuda:90"),
    ]
    return out


def element_types():
    """The element type sizes the scratch: pointers are 64-bit, i1 is stored as i8, f64/i64 64-bit."""
    out = []
    a, b = blocked([1, 4], [4, 8], [4, 1], [1, 0]), blocked([4, 1], [8, 4], [1, 4], [0, 1])
    for dtype in ("!tt.ptr<f16>", "!tt.ptr<f32>", "i1", "f64", "i64", "i8"):
        out.append(case("element type", a, b, [128, 64], dtype, "cuda:90"))
    out.append(case("element type", a, b, [64, 64], "!tt.ptr<f16>", "cuda:80"))
    amd_a, amd_b = blocked([1, 4], [4, 16], [4, 1], [1, 0]), blocked([4, 1], [16, 4], [1, 4], [0, 1])
    for dtype in ("!tt.ptr<bf16>", "i1"):
        for target in ("hip:gfx942", "hip:gfx950"):
            out.append(case("element type", amd_a, amd_b, [64, 64], dtype, target))
    # a pointer tensor moved by shuffles (no scratch whatever the width)
    out.append(case("element type", blocked([1, 1], [4, 8], [4, 1], [1, 0]), blocked([1, 1], [4, 8], [4, 1], [0, 1]),
                    [16, 8], "!tt.ptr<f16>", "cuda:80"))
    out.append(case("element type", blocked([1, 1], [4, 8], [4, 1], [1, 0]), blocked([1, 1], [4, 8], [4, 1], [0, 1]),
                    [16, 8], "i1", "cuda:90"))
    return out


def no_movement():
    """Nothing moves between threads: the same layout, or registers reordered within each thread."""
    lin = linear([(0, 2), (0, 1), (16, 0)], [(0, 4), (0, 8), (0, 16), (1, 0), (2, 0)], [(4, 0), (8, 0)])
    lin2 = linear([(0, 1), (0, 2), (16, 0)], [(0, 4), (0, 8), (0, 16), (1, 0), (2, 0)], [(4, 0), (8, 0)])
    same = blocked([1, 4], [4, 8], [4, 1], [1, 0])
    amd = blocked([1, 4], [4, 16], [4, 1], [1, 0])
    return [case("no movement", lin, lin2, [32, 32], "f16", "cuda:90"),
            case("no movement", same, linear([(0, 1), (0, 2), (0, 32)], [(0, 4), (0, 8), (0, 16), (1, 0), (2, 0)],
                                             [(4, 0), (8, 0)]), [16, 64], "f32", "cuda:80"),
            case("no movement", amd, linear([(0, 2), (0, 1)], [(0, 4), (0, 8), (0, 16), (0, 32), (1, 0), (2, 0)],
                                            [(4, 0), (8, 0)]), [16, 64], "i8", "hip:gfx942")]


def mfma4_blocked_random():
    """gfx950 mfma version 4 <-> blocked on 128x16 (the held-out misses of issue 33: shuffles, not
    shared memory), both directions, with blocked layouts drawn at random (a fixed seed) from those
    that tile 128x16 with 4 warps of 64 lanes, and both mfma instruction shapes and orientations."""
    import random

    rng = random.Random(33)
    out = []
    tpws = [[64, 1], [32, 2], [16, 4], [8, 8], [4, 16], [2, 32]]
    wpcs = [[4, 1], [2, 2], [1, 4]]
    sources = [mfma(4, warps, instr, transposed) for warps in ([4, 1], [2, 2], [1, 4])
               for instr in ([32, 32, 16], [16, 16, 32]) for transposed in (True, False)]
    seen = set()
    while len(out) < 120:
        tpw, wpc = rng.choice(tpws), rng.choice(wpcs)
        spt = [rng.choice([1, 2, 4, 8]), rng.choice([1, 2, 4, 8, 16])]
        order = rng.choice([[1, 0], [0, 1]])
        dst = blocked(spt, tpw, wpc, order)
        src = rng.choice(sources)
        forward = rng.random() < 0.5
        key = (src, dst, forward)
        if key in seen:
            continue
        seen.add(key)
        a, b = (src, dst) if forward else (dst, src)
        out.append(case("mfma4-blocked 128x16", a, b, [128, 16], rng.choice(["f16", "f32", "bf16"]), "hip:gfx950"))
    return out


CASES = [lane_orders, amd_slices, mfma_blocked, warp_copies, through_shared, element_types, no_movement,
         mfma4_blocked_random]


def all_cases():
    seen, out = set(), []
    for make in CASES:
        for c in make():
            key = json.dumps([c.get(k) for k in ("src", "dst", "shape", "dtype", "target", "num_warps", "num_ctas")])
            if key not in seen:
                seen.add(key)
                out.append(c)
    return out


# -- compiling one case (in the worker) ------------------------------------------------------------

SIG = {"f16": "*fp16", "bf16": "*bf16", "f32": "*fp32", "f64": "*fp64", "i8": "*i8", "i16": "*i16",
       "i32": "*i32", "i64": "*i64", "f8E4M3FN": "*fp8e4nv", "f8E5M2": "*fp8e5"}


def compile_case(item, ctx, builder, tmp):
    import triton
    import triton.experimental.gluon.language as ttgl
    from triton._C.libtriton import ir
    from triton.backends.compiler import GPUTarget
    from triton.experimental import gluon
    from triton.experimental.gluon import GluonASTSource

    rank = len(item["shape"])
    dims = "x".join(map(str, item["shape"]))
    path = os.path.join(tmp, "layouts.mlir")
    with open(path, "w") as f:
        f.write(f"#s = {item['src']}\n#d = {item['dst']}\n"
                f"module {{ tt.func @f(%x: tensor<{dims}xf32, #s>, %y: tensor<{dims}xf32, #d>) {{ tt.return }} }}\n")
    mod = ir.parse_mlir_module(path, ctx)
    fn = mod.get_function("f")
    src = builder.get_gluon_layout_from_tensor(fn.args(0))
    dst = builder.get_gluon_layout_from_tensor(fn.args(1))

    @gluon.jit
    def offsets(L: ttgl.constexpr, M: ttgl.constexpr, N: ttgl.constexpr, RANK: ttgl.constexpr):
        if RANK == 1:
            return ttgl.arange(0, M, layout=L)
        else:
            om = ttgl.arange(0, M, layout=ttgl.SliceLayout(1, L))
            on = ttgl.arange(0, N, layout=ttgl.SliceLayout(0, L))
            return om[:, None] * N + on[None, :]

    @gluon.jit
    def values(in_ptr, out_ptr, SRC: ttgl.constexpr, DST: ttgl.constexpr, M: ttgl.constexpr, N: ttgl.constexpr,
               RANK: ttgl.constexpr):
        x = ttgl.load(in_ptr + offsets(SRC, M, N, RANK))
        y = ttgl.convert_layout(x, DST)
        ttgl.store(out_ptr + offsets(DST, M, N, RANK), y)

    @gluon.jit
    def pointers(in_ptr, out_ptr, SRC: ttgl.constexpr, DST: ttgl.constexpr, M: ttgl.constexpr, N: ttgl.constexpr,
                 RANK: ttgl.constexpr):
        p = in_ptr + offsets(SRC, M, N, RANK)
        q = ttgl.convert_layout(p, DST)
        ttgl.store(out_ptr + offsets(DST, M, N, RANK), ttgl.load(q))

    @gluon.jit
    def booleans(in_ptr, out_ptr, SRC: ttgl.constexpr, DST: ttgl.constexpr, M: ttgl.constexpr, N: ttgl.constexpr,
                 RANK: ttgl.constexpr):
        x = ttgl.load(in_ptr + offsets(SRC, M, N, RANK)) != 0
        y = ttgl.convert_layout(x, DST)
        ttgl.store(out_ptr + offsets(DST, M, N, RANK), y.to(ttgl.int8))

    dtype = item["dtype"]
    if dtype.startswith("!tt.ptr<"):
        fn_, elem = pointers, SIG[dtype[len("!tt.ptr<"):-1]]
    elif dtype == "i1":
        fn_, elem = booleans, "*i8"
    else:
        fn_, elem = values, SIG[dtype]
    sig = {"in_ptr": elem, "out_ptr": elem, "SRC": "constexpr", "DST": "constexpr", "M": "constexpr",
           "N": "constexpr", "RANK": "constexpr"}
    consts = {"SRC": src, "DST": dst, "M": item["shape"][0], "N": item["shape"][1] if rank == 2 else 1,
              "RANK": rank}
    if rank not in (1, 2):
        raise ValueError("rank 1 or 2 only")
    backend, _, arch = item["target"].partition(":")
    target = GPUTarget("cuda", int(arch), 32) if backend == "cuda" else GPUTarget("hip", arch, item["threads_per_warp"])
    k = triton.compile(GluonASTSource(fn_, sig, consts), target=target, options={"num_warps": item["num_warps"], "num_ctas": item.get("num_ctas", 1)})
    llir, ttgir = k.asm["llir"], k.asm["ttgir"]
    cvts = [ln for ln in ttgir.splitlines() if "ttg.convert_layout" in ln]
    shared = "addrspace(3)" in llir
    shuffles = bool(re.search(r"shfl\.sync|ds\.bpermute|ds_bpermute|permlane|\.dpp", llir))
    return {"triton_kind": "shared" if shared else "shuffles" if shuffles else "none",
            "scratch_bytes": k.metadata.shared, "shuffle_ops": sorted(set(re.findall(
                r"llvm\.(?:nvvm\.shfl\.sync\.\w+|amdgcn\.(?:ds\.bpermute|permlane\w*(?:\.\w+)?))", llir))),
            "converts_in_ttgir": len(cvts)}


def worker():
    import signal

    from triton._C.libtriton import gluon_ir, ir

    ctx = ir.context()
    ir.load_dialects(ctx)
    builder = gluon_ir.GluonOpBuilder(ctx)
    tmp = tempfile.mkdtemp()

    def timeout(*_):
        raise TimeoutError(f"timeout after {TIMEOUT}s")

    signal.signal(signal.SIGALRM, timeout)
    for line in sys.stdin:
        signal.alarm(TIMEOUT)
        try:
            res = compile_case(json.loads(line), ctx, builder, tmp)
        except Exception as e:  # noqa: BLE001 -- Triton refused the kernel: recorded, left out of the reference
            res = {"error": f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:300]}
        signal.alarm(0)
        sys.stdout.write("RESULT " + json.dumps(res) + "\n")
        sys.stdout.flush()


def run(items):
    results, proc = [], None
    for it in items:
        if proc is None:
            proc = subprocess.Popen([sys.executable, __file__, "--worker"], stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        proc.stdin.write(json.dumps(it) + "\n")
        proc.stdin.flush()
        line = ""
        while True:
            line = proc.stdout.readline()
            if not line or line.startswith("RESULT "):
                break
        if line:
            res = json.loads(line[len("RESULT "):])
        else:  # the compiler aborted the worker
            proc.wait()
            proc = None
            res = {"error": "abort: Triton aborted"}
        results.append({**it, **res})
        print(len(results), len(items), it["family"], it["target"], res.get("triton_kind", res.get("error")),
              res.get("scratch_bytes", ""), file=sys.stderr, flush=True)
    if proc is not None:
        proc.stdin.close()
        proc.wait()
    return results


def main():
    if sys.argv[1:] == ["--worker"]:
        worker()
        return
    import triton
    out_path = sys.argv[1]
    only = sys.argv[2] if len(sys.argv) > 2 else None  # a family name substring, for a quick look
    items = [c for c in all_cases() if not only or only in c["family"]]
    results = run(items)
    kept = [r for r in results if "error" not in r]
    refused = [r for r in results if "error" in r]
    with open(out_path, "w") as f:
        json.dump({"triton": triton.__version__, "made_by": "tests/layout_cases/make_cvt_reference.py",
                   "refused": len(refused), "cases": kept}, f, indent=1)
        f.write("\n")
    print(len(kept), "cases,", len(refused), "refused by Triton", file=sys.stderr)
    for r in refused:
        print("refused:", r["family"], r["target"], r["error"], file=sys.stderr)


if __name__ == "__main__":
    main()
