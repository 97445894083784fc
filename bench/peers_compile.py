"""Compile the corpus's sm90_mix kernels for cuda:90 (no GPU needed), traced by tritonparse.

Run by `bench/peers.py` with the Triton 3.9 + tritonparse interpreter, MLIR_ENABLE_DUMP=1 and a fresh
TRITON_CACHE_DIR, its stderr kept as the dump log, so that tritonparse's trace and the per-pass dump log
describe the same six compiles:

    TRITON_CACHE_DIR=cache MLIR_ENABLE_DUMP=1 python peers_compile.py KERNELS_PY TRACE_DIR 2> dump.log

KERNELS_PY is sm90_mix/src/kernels.py from the corpus. The constexprs and num_warps are the ones the
corpus's sm90_mix compiles show in their cache metadata and IR (block sizes in `tt.make_range` and the
tensor shapes); pointers and i32 arguments are marked 16-divisible and unit strides specialised, as
the corpus's TTIR shows (what a launch with aligned sizes gives).
"""

import importlib.util
import sys

import triton
import tritonparse.structured_logging
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

TARGET = GPUTarget("cuda", 90, 32)
F16, F32 = "*fp16", "*fp32"


def load_kernels(path: str):
    spec = importlib.util.spec_from_file_location("kernels", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def compile_one(fn, signature: dict, constexprs: dict, num_warps: int) -> None:
    # 16-divisible pointers and i32s, as the corpus's TTIR marks them (`tt.divisibility = 16`)
    attrs = {(i,): [["tt.divisibility", 16]] for i, (name, kind) in enumerate(signature.items())
             if kind in (F16, F32, "i32")}
    source = ASTSource(fn=fn, signature=signature, constexprs=constexprs, attrs=attrs)
    triton.compile(source, target=TARGET, options={"num_warps": num_warps, "num_stages": 3})


def main(kernels_py: str, trace_dir: str) -> None:
    k = load_kernels(kernels_py)
    tritonparse.structured_logging.init(trace_dir)
    c = "constexpr"
    compile_one(k.add_kernel, {"x_ptr": F32, "y_ptr": F32, "out_ptr": F32, "n_elements": "i32", "BLOCK_SIZE": c},
                {"BLOCK_SIZE": 1024}, 4)
    compile_one(k.softmax_kernel, {"out_ptr": F32, "in_ptr": F32, "in_row_stride": "i32", "out_row_stride": "i32",
                                   "n_rows": "i32", "n_cols": "i32", "BLOCK_SIZE": c}, {"BLOCK_SIZE": 1024}, 8)
    compile_one(k.layernorm_kernel, {"X": F16, "Y": F16, "W": F16, "B": F16, "Mean": F32, "Rstd": F32,
                                     "stride": "i32", "N": "i32", "eps": "fp32", "BLOCK_SIZE": c},
                {"BLOCK_SIZE": 1024}, 8)
    compile_one(k.matmul_kernel, {"a_ptr": F16, "b_ptr": F16, "c_ptr": F16, "M": "i32", "N": "i32", "K": "i32",
                                  "stride_am": "i32", "stride_ak": c, "stride_bk": "i32", "stride_bn": c,
                                  "stride_cm": "i32", "stride_cn": c,
                                  "BLOCK_M": c, "BLOCK_N": c, "BLOCK_K": c, "GROUP_M": c},
                {"stride_ak": 1, "stride_bn": 1, "stride_cn": 1, "BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64,
                 "GROUP_M": 8}, 8)
    compile_one(k.matmul_descriptor_kernel, {"a_ptr": F16, "b_ptr": F16, "c_ptr": F16, "M": "i32", "N": "i32",
                                             "K": "i32", "BLOCK_M": c, "BLOCK_N": c, "BLOCK_K": c},
                {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64}, 8)
    compile_one(k.attention_fwd_kernel, {"Q": F16, "K": F16, "V": F16, "Out": F16, "sm_scale": "fp32",
                                         "stride_qm": "i32", "stride_kn": "i32", "stride_vn": "i32",
                                         "stride_om": "i32", "N_CTX": "i32",
                                         "BLOCK_M": c, "BLOCK_N": c, "HEAD_DIM": c},
                {"BLOCK_M": 128, "BLOCK_N": 64, "HEAD_DIM": 64}, 8)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
