"""#ttng.tensor_memory_encoding (Blackwell TMEM): tensor element -> (TMEM lane ``row``, column ``col``, ``block``).

Triton 3.9's tensorMemoryToLinearLayout (LinearLayoutConversions.cpp), checked against its own
``to_linear_layout`` in the fixtures: the shape is first divided among the CTAs of ``CGALayout``;
a 128-row block fills the 128 lanes; a 64-row block uses lanes 0-15 and 32-63 for its rows and gives
lanes 16-31 to the next block (along M first, else along N), unless ``twoCTAs`` pairs two CTAs, when
the 64 rows fill lanes 0-63 and the last column bit moves to lane 64. ``colStride`` (and the
``fp4Padded`` byte per FP4 element) leaves columns that hold nothing. Further blocks go to columns,
M blocks before N blocks; the CTAs of the cluster come last, as ``block``.
"""

from __future__ import annotations

from app.layouts.cga import cga_layout, check_shape
from app.layouts.errors import LayoutError
from app.layouts.linear import LinearLayout, log2, out_names


def tensor_memory(params: dict, shape: list[int]) -> LinearLayout:
    bm, bn, stride = params.get("blockM"), params.get("blockN"), params.get("colStride", 1)
    two_ctas, fp4 = bool(params.get("twoCTAs", False)), bool(params.get("fp4Padded", False))
    if bm not in (64, 128) or not isinstance(bn, int) or bn <= 0:
        raise LayoutError("tensor_memory_encoding needs blockM 64 or 128 and blockN")
    if "CTASplitM" in params or "CTASplitN" in params:
        raise LayoutError("CTASplitM/CTASplitN is an older Triton's tensor memory spelling; Triton 3.9 writes CGALayout")
    if not isinstance(stride, int):
        raise LayoutError("colStride must be an integer")
    log2(stride)
    log2(bn)
    check_shape(shape, 2, "tensor memory")
    names = out_names(2)
    cga = cga_layout(params, 2)
    if two_ctas and (not cga.in_bases("block") or cga.in_bases("block")[0] != [1, 0]):
        raise LayoutError("twoCTAs layout requires the first CGALayout block basis to be [1, 0]")
    split = [cga.out_size(n) for n in names]
    if shape[0] < bm * split[0] or shape[1] < min(bn, shape[1]) * split[1]:
        # MemDescType's verifier: every CTA holds at least one whole blockM x blockN block
        raise LayoutError(f"the tensor shape must be at least {bm * split[0]}x{min(bn, shape[1]) * split[1]} "
                          f"for this tensor memory layout (Triton refuses {'x'.join(map(str, shape))})")
    per_cta = []
    for s, n in zip(shape, names):
        if s < cga.out_size(n):
            raise LayoutError(f"the shape {'x'.join(map(str, shape))} is smaller than the cluster's CTAs along {n}")
        per_cta.append(s // cga.out_size(n))
    m, n = per_cta
    bn = min(bn, n)
    cols = [[0, 0]] * (log2(stride) + (1 if fp4 else 0))
    cols = cols + [[0, 1 << j] for j in range(log2(bn))]
    if bm == 64 and not two_ctas:
        if m > 64:
            spare = [64, 0]
        elif n > bn:
            spare = [0, bn]
        else:
            spare = [0, 0]  # lanes 16-31 hold nothing
        rows = [[1 << i, 0] for i in range(4)] + [spare, [16, 0], [32, 0]]
        tile_m = 128 if spare == [64, 0] else 64
        tile_n = 2 * bn if spare == [0, bn] else bn
    else:
        rows = [[1 << i, 0] for i in range(log2(bm))]
        tile_m, tile_n = bm, bn
        if bm == 64:  # two CTAs: 64 rows x blockN is laid out as 128 x blockN/2
            rows.append(cols.pop())
    if m < tile_m:
        raise LayoutError(f"a {m}-row tensor (per CTA) in {tile_m}-row tensor memory blocks: Triton cannot lay it out")
    cols += [[tile_m << i, 0] for i in range(log2(m // tile_m))]
    cols += [[0, tile_n << i] for i in range(log2(n // tile_n))]
    block = [[b[0] * m, b[1] * n] for b in cga.in_bases("block")]
    return LinearLayout({"row": rows, "col": cols, "block": block}, [(names[0], shape[0]), (names[1], shape[1])])
