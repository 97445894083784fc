"""Triton 3.9's own bank conflicts for (distributed, shared) layout pairs (run under a Triton 3.9 venv).

    /work/venvs/t39/bin/python tests/layout_cases/make_bank_conflicts.py \
        /work/corpus tests/layout_cases/triton39_bank_conflicts.json.gz

Pairs: (a) every local_load / local_store / local_alloc with a value / async_copy_global_to_local of
the NVIDIA corpus captures (dump.log and cache/*.ttgir of /work/corpus/*, targets cuda:*), and of
kernels this script compiles itself with Triton 3.9 for cuda:80, cuda:90 and cuda:100 (a pipelined
matmul in f16, bf16, f32, f8 and i8, and a transposed-load variant; bank_demo.py's Gluon kernel); (b) the other pairs of the same
shape and element type (each distributed encoding seen at that shape against each shared one);
(c) a sweep built from Gluon's layout classes: blocked, mma v2/v3, dot operands, slices, linear ×
swizzled_shared, nvmma_shared, padded_shared, shared_linear, for f16/bf16/f32/f8/i8/f64 (and i16, i32,
i64, f8E5M2), rank 1 to 3, and clusters of 2 and 4 CTAs (CGA layouts on both sides).

Triton's answer is Gluon's ``ttgl.bank_conflicts(distributed_type, shared_type)``, evaluated by
generating the IR of a one-line Gluon kernel (``static_print``) for cuda:90; it runs in worker
processes, so that a pair Triton aborts on costs only itself (recorded as "error").
"""

import contextlib
import gzip
import io
import json
import os
import random
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "fixtures", "layouts"))
from make_layout_fixtures import ALIAS_DEF, balanced, expand, to_triton_39

OPS = ("ttg.local_load", "ttg.local_store", "ttg.local_alloc %", "ttg.async_copy_global_to_local")
TENSOR = re.compile(r"tensor<((?:\d+x)+)([^,<>]*(?:<[^<>]*>)?), (?=#)")
MEMDESC = re.compile(r"(?:!ttg\.memdesc|-> )<((?:\d+x)+)(\w+), (?=#)")
ELEMS = {"f16": "float16", "bf16": "bfloat16", "f32": "float32", "f64": "float64", "i8": "int8",
         "i16": "int16", "i32": "int32", "i64": "int64", "f8E4M3FN": "float8e4nv", "f8E5M2": "float8e5"}


def scan_text(lines, chosen, dists, shareds):
    """Pairs the compiler chose (per op line) and every encoding seen per (shape, element type)."""
    aliases = {}
    for line in lines:
        m = ALIAS_DEF.match(line.rstrip("\n"))
        if m:
            aliases[m.group(1)] = m.group(2)
            continue
        tensors = []
        for t in TENSOR.finditer(line):
            enc = expand(balanced(line, t.end()), aliases)
            shape = tuple(int(x) for x in t.group(1).split("x") if x)
            tensors.append((enc, shape, t.group(2).strip()))
        mems = []
        for t in MEMDESC.finditer(line):
            enc = expand(balanced(line, t.end()), aliases)
            shape = tuple(int(x) for x in t.group(1).split("x") if x)
            mems.append((enc, shape, t.group(2).strip()))
        for enc, shape, elem in tensors:
            if elem in ELEMS and "#ttg." in enc and "shared" not in enc:
                dists.setdefault((shape, elem), set()).add(enc)
        for enc, shape, elem in mems:
            if elem in ELEMS and "_shared<" in enc:
                shareds.setdefault((shape, elem), set()).add(enc)
        if not any(op in line for op in OPS) or not tensors or not mems:
            continue
        denc, dshape, _ = tensors[0]
        senc, sshape, selem = mems[0]
        if sshape[-len(dshape):] == dshape and selem in ELEMS and "_shared<" in senc:
            chosen.add((denc, senc, dshape, selem))


def corpus_texts(corpus_dir):
    for name in sorted(os.listdir(corpus_dir)):
        root = os.path.join(corpus_dir, name)
        meta = os.path.join(root, "meta.txt")
        if not os.path.isfile(meta):
            continue
        with open(meta) as f:
            said = f.read()
        if "cuda" not in said and "H200" not in said:
            continue
        for dirpath, _dirs, files in os.walk(root):
            for f in files:
                if f == "dump.log" or f.endswith(".ttgir"):
                    yield os.path.join(dirpath, f)


COMPILE_SRC = '''
import triton
import triton.language as tl


@triton.jit
def mm(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
       BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, TRANS_B: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a_ptrs = a_ptr + rm[:, None] * sam + rk[None, :] * sak
    if TRANS_B:
        b_ptrs = b_ptr + rn[None, :] * sbn + rk[:, None] * sbk
    else:
        b_ptrs = b_ptr + rk[:, None] * sbk + rn[None, :] * sbn
    acc = tl.zeros((BM, BN), dtype=tl.float32 if a_ptr.dtype.element_ty != tl.int8 else tl.int32)
    for k in tl.range(0, K, BK, num_stages=3):
        a = tl.load(a_ptrs, mask=rk[None, :] < K - k, other=0)
        b = tl.load(b_ptrs, mask=rk[:, None] < K - k, other=0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BK * sak
        b_ptrs += BK * sbk
    tl.store(c_ptr + rm[:, None] * scm + rn[None, :] * scn, acc.to(c_ptr.dtype.element_ty))
'''


def compiled_texts():
    """TTGIR of kernels compiled here with Triton 3.9 for several NVIDIA targets (no GPU needed)."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    kdir = tempfile.mkdtemp()
    with open(os.path.join(kdir, "bc_mm.py"), "w") as f:
        f.write(COMPILE_SRC)
    sys.path.insert(0, kdir)
    import bc_mm
    out = []
    for arch in (80, 90, 100):
        for dt, ct in (("fp16", "fp16"), ("bf16", "bf16"), ("fp32", "fp32"), ("fp8e4nv", "fp16"), ("i8", "i32")):
            if dt == "fp8e4nv" and arch < 90:
                continue
            for bm, bn, bk, tb in ((128, 128, 64, False), (64, 64, 32, True), (128, 64, 32, False)):
                sig = {"a_ptr": f"*{dt}", "b_ptr": f"*{dt}", "c_ptr": f"*{ct}", "M": "i32", "N": "i32", "K": "i32",
                       "sam": "i32", "sak": "i32", "sbk": "i32", "sbn": "i32", "scm": "i32", "scn": "i32"}
                consts = {"BM": bm, "BN": bn, "BK": bk, "TRANS_B": tb, "sak": 1, "sbn": 1}
                try:
                    k = triton.compile(ASTSource(bc_mm.mm, sig, consts), target=GPUTarget("cuda", arch, 32))
                    out.append((f"cuda:{arch} {dt} {bm}x{bn}x{bk}{' T' if tb else ''}", k.asm["ttgir"]))
                except Exception as e:  # noqa: BLE001 -- a config Triton refuses is no capture
                    print(f"compile cuda:{arch} {dt}: {type(e).__name__}", file=sys.stderr)
    # a Gluon kernel that stores a column-wise tile to an unswizzled layout (conflicts) and a swizzled one
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import bank_demo
    out.append(("bank_demo cuda:90", bank_demo.compile_it().asm["ttgir"]))
    return out


def sweep():
    """(distributed gluon layout, shared gluon layout, shape, element) pairs built from Gluon's classes."""
    import triton.experimental.gluon.language as ttgl
    out = []
    shapes = [[128, 64], [64, 64], [64, 128], [32, 32], [256, 64], [16, 64]]
    dists = []
    for w in ([4, 1], [2, 2], [1, 4], [8, 1]):
        for spt, tpw, order in (([1, 8], [4, 8], [1, 0]), ([8, 1], [8, 4], [0, 1]), ([1, 1], [32, 1], [0, 1]),
                                ([1, 1], [1, 32], [1, 0]), ([1, 4], [8, 4], [1, 0]), ([2, 2], [4, 8], [1, 0]),
                                ([4, 4], [2, 16], [1, 0]), ([1, 2], [16, 2], [0, 1])):
            dists.append(ttgl.BlockedLayout(spt, tpw, w, order))
    mma2 = [ttgl.NVMMADistributedLayout([2, 0], w, [16, 8]) for w in ([4, 1], [2, 2], [1, 4])]
    mma3 = [ttgl.NVMMADistributedLayout([3, 0], [4, 1], [16, n, 16]) for n in (64, 128)]
    dists += mma2 + mma3
    for p in mma2:
        for op in (0, 1):
            for kw in (1, 2, 4, 8):
                dists.append(ttgl.DotOperandLayout(op, p, kw))
    for kw in (2, 4):
        dists.append(ttgl.DotOperandLayout(0, mma3[0], kw))
    dists.append(ttgl.DistributedLinearLayout([[0, 1], [0, 2], [0, 0], [16, 0]],
                                              [[1, 0], [2, 0], [4, 0], [8, 0], [0, 4]], [[0, 8], [32, 0]], [], [64, 16]))
    shared = []
    for sw in (0, 32, 64, 128):
        for bw in (8, 16, 32):
            for tr in (False, True):
                shared.append(ttgl.NVMMASharedLayout(sw, bw, 2, tr))
    for vec, pp, mp in ((1, 1, 1), (8, 1, 8), (4, 2, 4), (8, 4, 2), (2, 1, 16), (4, 1, 16), (1, 1, 32)):
        for order in ([1, 0], [0, 1]):
            shared.append(ttgl.SwizzledSharedLayout(vec, pp, mp, order))
    shared.append(ttgl.SharedLinearLayout([[0, 1], [0, 2], [0, 4], [1, 0], [2, 0], [4, 4], [8, 0], [16, 0],
                                           [32, 0], [0, 8], [0, 16], [0, 32]]))
    rng = random.Random(36)
    elems = ["f16", "bf16", "f32", "f8E4M3FN", "i8", "f64"]
    for d in dists:
        for s in shared:
            for shape in rng.sample(shapes, 2):
                elem = rng.choice(elems)
                if isinstance(s, ttgl.NVMMASharedLayout):
                    elem = {8: rng.choice(["i8", "f8E4M3FN"]), 16: rng.choice(["f16", "bf16"]), 32: "f32"}[
                        s.element_bitwidth]
                if isinstance(s, ttgl.SharedLinearLayout):
                    shape = [64, 64]
                out.append((d, s, shape, elem))
    # clusters (CGA layouts on both sides), rank 1 and 3, slices, small tiles, i16/i32/i64/f8e5
    for cga in ([[1, 0]], [[0, 1]], [[1, 0], [0, 1]]):
        d_cga = [ttgl.BlockedLayout([1, 8], [4, 8], [4, 1], [1, 0], cga), ttgl.BlockedLayout([8, 1], [8, 4], [1, 4], [0, 1], cga),
                 ttgl.NVMMADistributedLayout([3, 0], [4, 1], [16, 64, 16], cga)]
        s_cga = [ttgl.SwizzledSharedLayout(8, 1, 8, [1, 0], cga), ttgl.SwizzledSharedLayout(1, 1, 1, [0, 1], cga),
                 ttgl.NVMMASharedLayout(128, 16, 2, False, False, cga), ttgl.NVMMASharedLayout(64, 16, 2, True, False, cga)]
        for d in d_cga:
            for s in s_cga:
                for shape in ([128, 128], [256, 64]):
                    out.append((d, s, shape, "f16"))
    for d in (ttgl.BlockedLayout([4], [32], [4], [0]), ttgl.BlockedLayout([1], [32], [8], [0]),
              ttgl.SliceLayout(0, dists[0]), ttgl.SliceLayout(1, dists[0]), ttgl.SliceLayout(0, mma2[0])):
        for s in (ttgl.SwizzledSharedLayout(1, 1, 1, [0]), ttgl.SwizzledSharedLayout(4, 1, 8, [0])):
            for shape, elem in (([1024], "f32"), ([256], "f16"), ([64], "i8"), ([128], "f64")):
                out.append((d, s, shape, elem))
    for d in (ttgl.BlockedLayout([1, 1, 4], [1, 8, 4], [2, 2, 1], [2, 1, 0]),
              ttgl.BlockedLayout([1, 4, 1], [2, 4, 4], [1, 1, 4], [1, 2, 0])):
        for s in (ttgl.SwizzledSharedLayout(4, 1, 8, [2, 1, 0]), ttgl.SwizzledSharedLayout(1, 1, 1, [1, 2, 0]),
                  ttgl.NVMMASharedLayout(128, 16, 3, False), ttgl.NVMMASharedLayout(32, 32, 3, True)):
            for shape in ([2, 64, 64], [4, 32, 32]):
                out.append((d, s, shape, "f16" if not isinstance(s, ttgl.NVMMASharedLayout) or s.element_bitwidth == 16
                            else "f32"))
    for d in dists[:16:3] + mma2:
        for s in (ttgl.SwizzledSharedLayout(2, 2, 4, [1, 0]), ttgl.SwizzledSharedLayout(1, 1, 1, [1, 0])):
            for shape, elem in (([16, 16], "i16"), ([32, 64], "i32"), ([64, 32], "i64"), ([8, 32], "f8E5M2"),
                                ([32, 32], "bf16")):
                out.append((d, s, shape, elem))
    for pairs, shape, order in (([[64, 4]], [16, 64], [1, 0]), ([[128, 8]], [128, 64], [1, 0]),
                                ([[32, 1]], [64, 32], [0, 1]), ([[64, 8]], [64, 64], [1, 0])):
        p = ttgl.PaddedSharedLayout.with_identity_for(pairs, shape, order)
        for d in dists[::3]:
            out.append((d, p, shape, rng.choice(["f16", "f32", "i8"])))
    return out


def gluon_text(layout, shape, mem):
    """The attribute text Triton prints for a Gluon layout object."""
    from triton._C.libtriton import gluon_ir, ir
    ctx = ir.context()
    ir.load_dialects(ctx)
    b = gluon_ir.GluonOpBuilder(ctx)
    m = b.create_module()
    attr = layout._to_ir(b)
    ty = b.get_shared_mem_desc_ty(b.get_half_ty(), shape, attr, shape) if mem else \
        b.get_distributed_ty(b.get_half_ty(), shape, attr)
    fn = b.get_or_insert_function(m, "f", b.get_function_ty([ty], []), "public", False)
    m.push_back(fn)
    text = m.str()
    aliases = {}
    for line in text.splitlines():
        mm = ALIAS_DEF.match(line)
        if mm:
            aliases[mm.group(1)] = mm.group(2)
    start = re.search(r"(?:tensor|memdesc)<(?:\d+x)+f16, ", text).end()
    return expand(balanced(text, start), aliases)


# ---- worker: one Triton evaluation per request line ----

KSRC_HEAD = "from triton.experimental import gluon\nfrom triton.experimental.gluon import language as ttgl\n"
KSRC_ONE = '''
@gluon.jit
def k_{name}(D: ttgl.constexpr, S: ttgl.constexpr, SHAPE: ttgl.constexpr):
    d: ttgl.constexpr = ttgl.distributed_type(ttgl.{ty}, SHAPE, D)
    s: ttgl.constexpr = ttgl.shared_memory_descriptor_type(ttgl.{ty}, SHAPE, S, SHAPE)
    ttgl.static_print("BANKCONFLICTS", ttgl.bank_conflicts(d, s))
'''


def worker():
    import triton
    from triton._C.libtriton import gluon_ir, ir
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource
    kdir = tempfile.mkdtemp()
    with open(os.path.join(kdir, "bc_kernels.py"), "w") as f:
        f.write(KSRC_HEAD + "".join(KSRC_ONE.format(name=n.replace("8E", "8e"), ty=t) for n, t in ELEMS.items()))
    sys.path.insert(0, kdir)
    import bc_kernels
    target = GPUTarget("cuda", 90, 32)
    backend = triton.compiler.make_backend(target)
    options = backend.parse_options({"num_warps": 4})
    ctx = ir.context()
    ir.load_dialects(ctx)
    b = gluon_ir.GluonOpBuilder(ctx)
    for n, line in enumerate(sys.stdin):
        item = json.loads(line)
        try:
            shape, elem = item["shape"], item["elem"]
            dims = "x".join(map(str, shape))
            path = os.path.join(kdir, f"m{n}.mlir")
            with open(path, "w") as f:
                f.write(f"#d = {item['triton_dist']}\n#s = {item['triton_shared']}\nmodule {{ tt.func private "
                        f"@f(%x: tensor<{dims}x{elem}, #d>, %y: !ttg.memdesc<{dims}x{elem}, #s, #ttg.shared_memory>)"
                        f" {{ tt.return }} }}\n")
            mod = ir.parse_mlir_module(path, ctx)
            fn = mod.get_function("f")
            dl, sl = b.get_gluon_layout_from_tensor(fn.args(0)), b.get_gluon_layout_from_memdesc(fn.args(1))
            kernel = getattr(bc_kernels, "k_" + elem.replace("8E", "8e"))
            src = GluonASTSource(kernel, {}, {"D": dl, "S": sl, "SHAPE": list(shape)})
            kctx = ir.context()
            ir.load_dialects(kctx)
            backend.load_dialects(kctx)
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                src.make_ir(target, options, backend.get_codegen_implementation(options), backend.get_module_map(),
                            kctx)
            m = re.search(r"BANKCONFLICTS (\d+)", buf.getvalue())
            res = {"bank_conflicts": int(m.group(1))} if m else {"error": "no answer printed"}
        except Exception as e:  # noqa: BLE001 -- Triton refused this pair: irlens must not answer it either
            msg = str(e).strip().splitlines()
            res = {"error": f"{type(e).__name__}: {msg[-1][:200] if msg else ''}"}
        sys.stdout.write(json.dumps(res) + "\n")
        sys.stdout.flush()


def evaluate(items):
    results = []
    pending = list(items)
    while pending:
        proc = subprocess.Popen([sys.executable, __file__, "--worker"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True)
        done = 0
        for it in pending:
            proc.stdin.write(json.dumps(it) + "\n")
            proc.stdin.flush()
            line = proc.stdout.readline()
            if not line:
                results.append({"error": "Triton aborted (LLVM ERROR or crash) on this pair"})
                done += 1
                break
            results.append(json.loads(line))
            done += 1
        proc.stdin.close()
        proc.wait()
        pending = pending[done:]
        print(f"{len(results)} / {len(items)}", file=sys.stderr)
    return results


def main():
    if sys.argv[1:] == ["--worker"]:
        worker()
        return
    corpus_dir, out_path = sys.argv[1], sys.argv[2]
    chosen, dists, shareds = set(), {}, {}
    for path in corpus_texts(corpus_dir):
        with open(path, errors="replace") as f:
            scan_text(f, chosen, dists, shareds)
    n_corpus = len(chosen)
    for _name, text in compiled_texts():
        scan_text(text.splitlines(), chosen, dists, shareds)
    items = [{"source": "chosen", "dist": d, "shared": s, "shape": list(sh), "elem": e}
             for d, s, sh, e in sorted(chosen)]
    seen = {(it["dist"], it["shared"], tuple(it["shape"]), it["elem"]) for it in items}
    for (shape, elem), ds in sorted(dists.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        for d in sorted(ds)[:12]:
            for s in sorted(shareds.get((shape, elem), ())):
                key = (d, s, shape, elem)
                if key not in seen:
                    seen.add(key)
                    items.append({"source": "same_shape", "dist": d, "shared": s, "shape": list(shape), "elem": elem})
    for dl, sl, shape, elem in sweep():
        try:
            d, s = gluon_text(dl, shape, False), gluon_text(sl, shape, True)
        except Exception:  # noqa: BLE001, S112 -- a layout Triton cannot lay out at this shape
            continue
        key = (d, s, tuple(shape), elem)
        if key not in seen:
            seen.add(key)
            items.append({"source": "sweep", "dist": d, "shared": s, "shape": shape, "elem": elem})
    for it in items:
        it["triton_dist"], it["triton_shared"] = to_triton_39(it["dist"], it["elem"]), to_triton_39(it["shared"], it["elem"])
    results = evaluate(items)
    fixtures = []
    for it, res in zip(items, results):
        entry = {k: it[k] for k in ("source", "dist", "shared", "shape", "elem")}
        entry.update(res)
        fixtures.append(entry)
    print(f"corpus op pairs {n_corpus}, all {len(fixtures)}", file=sys.stderr)
    with gzip.open(out_path, "wt") as f:
        json.dump({"triton": "3.9.0", "fixtures": fixtures}, f, indent=0)


if __name__ == "__main__":
    main()
