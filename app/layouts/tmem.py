"""#ttng.tensor_memory_encoding (Blackwell TMEM): tensor element -> (TMEM lane ``row``, column ``col``).

Fitted to Triton 3.9's own ``to_linear_layout`` for tensor memory (the fixtures hold every case
drawn here): a 128-row block fills the 128 lanes; a 64-row block uses lanes 0-15 and 32-63 for its
rows and gives lanes 16-31 to the next block (along M first, else along N). Further blocks go to
columns, N blocks before M blocks. Only colStride = 1 and unpacked blocks are drawn.
"""

from __future__ import annotations

from app.layouts.cga import check_shape
from app.layouts.errors import LayoutError
from app.layouts.linear import LinearLayout, log2, out_names


def tensor_memory(params: dict, shape: list[int]) -> LinearLayout:
    bm, bn, stride = params.get("blockM"), params.get("blockN"), params.get("colStride", 1)
    if bm not in (64, 128) or not isinstance(bn, int) or bn <= 0:
        raise LayoutError("tensor_memory_encoding needs blockM 64 or 128 and blockN")
    if stride != 1 or params.get("twoCTAs") or params.get("CGALayout"):
        raise LayoutError("only colStride = 1, single-CTA tensor memory is drawn here")
    check_shape(shape, 2, "tensor memory")
    log2(bn)
    m, n = shape
    if m < bm:
        raise LayoutError(f"a {m}-row tensor in {bm}-row tensor memory blocks is not drawn here")
    rows = [[1 << i, 0] for i in range(4 if bm == 64 else 7)]
    used_m = used_n = 0
    if bm == 64:
        if m > 64:
            spare, used_m = [64, 0], 64
        elif n > bn:
            spare, used_n = [0, bn], bn
        else:
            spare = [0, 0]
        rows += [spare, [16, 0], [32, 0]]
    cols = [[0, 1 << j] for j in range(log2(min(bn, n)))]
    cols += [[0, v] for v in _powers(bn, n) if v != used_n]
    cols += [[v, 0] for v in _powers(bm, m) if v != used_m]
    return LinearLayout({"row": rows, "col": cols}, [(name, size) for name, size in zip(out_names(2), shape)])


def _powers(start: int, stop: int) -> list[int]:
    out, v = [], start
    while v < stop:
        out.append(v)
        v *= 2
    return out
