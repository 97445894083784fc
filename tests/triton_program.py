"""A small program for `irlens capture` tests: compiles two Triton kernels for cuda:90 without a GPU.

`--exit N` exits with status N after compiling; `--wait` prints "ready" and sleeps until interrupted.
"""

import sys
import time

import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource


@triton.jit
def scaled(x, factor):
    return x * factor


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, scaled(x + y, 2.0), mask=mask)


def main() -> int:
    source = ASTSource(
        fn=add_kernel,
        signature={"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"},
        constexprs={"BLOCK": 1024},
    )
    compiled = triton.compile(source, target=GPUTarget("cuda", 90, 32))
    print(f"compiled {compiled.name}", flush=True)
    if "--wait" in sys.argv:
        print("ready", flush=True)
        time.sleep(120)
    if "--exit" in sys.argv:
        return int(sys.argv[sys.argv.index("--exit") + 1])
    return 0


if __name__ == "__main__":
    sys.exit(main())
