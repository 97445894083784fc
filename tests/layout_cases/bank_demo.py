"""A Gluon kernel that stages a tile through shared memory twice: once into an unswizzled layout
(every lane of a column lands in the same banks) and once into a swizzled one."""
# The capture staged_transpose_sm90_triton39.log.xz was made from this file (same line numbers).
import triton
from triton.backends.compiler import GPUTarget
from triton.experimental import gluon
from triton.experimental.gluon import language as ttgl
from triton.experimental.gluon._runtime import GluonASTSource


@gluon.jit
def staged_transpose_kernel(x_ptr, out_ptr, M: ttgl.constexpr, N: ttgl.constexpr):
    cols: ttgl.constexpr = ttgl.BlockedLayout([1, 1], [32, 1], [4, 1], [0, 1])
    rows: ttgl.constexpr = ttgl.BlockedLayout([1, 4], [4, 8], [4, 1], [1, 0])
    plain: ttgl.constexpr = ttgl.SwizzledSharedLayout(1, 1, 1, [1, 0])
    swizzled: ttgl.constexpr = ttgl.SwizzledSharedLayout(4, 1, 8, [1, 0])
    m = ttgl.arange(0, M, layout=ttgl.SliceLayout(1, cols))
    n = ttgl.arange(0, N, layout=ttgl.SliceLayout(0, cols))
    x = ttgl.load(x_ptr + m[:, None] * N + n[None, :])
    a = ttgl.allocate_shared_memory(ttgl.float32, [M, N], plain, x)
    b = ttgl.allocate_shared_memory(ttgl.float32, [M, N], swizzled)
    b.store(x)
    y = a.load(rows) + b.load(rows)
    m2 = ttgl.arange(0, M, layout=ttgl.SliceLayout(1, rows))
    n2 = ttgl.arange(0, N, layout=ttgl.SliceLayout(0, rows))
    ttgl.store(out_ptr + m2[:, None] * N + n2[None, :], y)


def compile_it():
    src = GluonASTSource(staged_transpose_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32"}, {"M": 128, "N": 64})
    return triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": 4})


if __name__ == "__main__":
    # the capture: MLIR_ENABLE_DUMP=1 TRITON_ALWAYS_COMPILE=1 python bank_demo.py 2> dump.log
    compile_it()
