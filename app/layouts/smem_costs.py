"""Each shared-memory access of one IR text with its bank conflicts: a line scan (aliases are defined
before use) over ttg.local_load, ttg.local_store, ttg.local_alloc with a value and
ttg.async_copy_global_to_local, each distinct (distributed, shared, shape, element type) decided once
by app/layouts/bank_conflicts.py (Triton 3.9's count for ld/st.shared, 32 banks).

Only NVIDIA targets are counted: AMD's LDS (64 banks on CDNA3/4, ds_read/ds_write widths) follows
another rule that irlens does not model, and such accesses say so instead of showing a number."""

from __future__ import annotations

import io
import re
from collections.abc import Iterable, Iterator
from functools import lru_cache

from app.layouts.aliases import expand
from app.layouts.bank_conflicts import analyse, wavefront_picture
from app.layouts.convert import to_linear_layout
from app.layouts.errors import LayoutError
from app.layouts.ir_lines import op_lines
from app.layouts.parse import parse_encoding

_OP = re.compile(r"\b(?:ttg|triton_gpu)\.(local_load|local_store|local_alloc|async_copy_global_to_local)\b")
_TENSOR = re.compile(r"tensor<((?:\d+x)+)([^,<>]*(?:<[^<>]*>)?), ")
_MEMDESC = re.compile(r"(?:!(?:ttg|triton_gpu|tt)\.memdesc|-> )<((?:\d+x)+)([\w]+), ")
_BITS = re.compile(r"(?:[su]?i|f|bf|tf)(\d+)")
MAX_ACCESSES = 5000  # per text; a page lists them, so bound the work
UNSUPPORTED_AMD = ("AMD LDS (64 banks, ds_read/ds_write widths) follows its own rule, "
                   "which irlens does not model")
OP_LABELS = {"local_load": "shared → registers", "local_store": "registers → shared",
             "local_alloc": "registers → shared", "async_copy_global_to_local": "global → shared (cp.async)"}


def primitive_bits(element_type: str) -> int:
    """The element's own bit width, as Gluon hands it to Triton (``primitive_bitwidth``): i1 is 1,
    f8E4M3FN 8, a pointer 64."""
    t = element_type.strip()
    if t.startswith("!tt.ptr"):
        return 64
    if t == "index":
        return 64
    m = _BITS.match(t)
    if not m or int(m.group(1)) <= 0:
        raise LayoutError(f"unknown element type {t!r}")
    return int(m.group(1))


def _encoding(line: str, start: int) -> str:
    depth = 0
    for i in range(start, len(line)):
        c = line[i]
        if c in "<{[(":
            depth += 1
        elif c in ">}])":
            if depth == 0:
                return line[start:i]
            depth -= 1
        elif c == "," and depth == 0:
            return line[start:i]
    return line[start:]


@lru_cache(maxsize=4096)
def pair_conflicts(dist: str, shared: str, shape: tuple[int, ...], bits: int) -> dict | None:
    """analyse() of one pair, or None where either layout cannot be laid out at this shape."""
    try:
        reg = to_linear_layout(parse_encoding(dist), list(shape))
        smem = to_linear_layout(parse_encoding(shared), list(shape))
        return analyse(reg, smem, bits)
    except (LayoutError, ValueError, KeyError, TypeError):
        return None


def pair_report(dist: str, shared: str, shape: list[int], element_type: str, target: str = "") -> dict:
    """The inspector's answer for storing a distributed layout to a shared one (or loading it back):
    {"bank_conflicts", "wavefronts", "vector", "access_bits", "lanes_per_wavefront", "element_bits",
    "lanes": [{"lane", "offset", "word", "bank", "wavefront"}] of warp 0's first access}.
    ``bank_conflicts`` is null on an AMD target (``unsupported`` says why). LayoutError when a layout
    cannot be laid out at the shape, or Triton has no count for the pair (padded_shared)."""
    if not element_type:
        raise LayoutError("the tensor's element type is needed for bank conflicts (elem=f16, elem=f32, ...)")
    bits = primitive_bits(element_type)
    if parse_encoding(shared).kind == "ttg.padded_shared":
        raise LayoutError("Triton 3.9 counts no bank conflicts for padded_shared (its bank_conflicts aborts)")
    if (target or "").startswith("hip"):
        return {"bank_conflicts": None, "unsupported": UNSUPPORTED_AMD, "element_bits": bits}
    reg = to_linear_layout(parse_encoding(dist), list(shape))
    smem = to_linear_layout(parse_encoding(shared), list(shape))
    result = analyse(reg, smem, bits)
    out = {k: result[k] for k in ("bank_conflicts", "wavefronts", "vector", "access_bits", "lanes_per_wavefront",
                                  "element_bits", "banks")}
    out["lanes"] = wavefront_picture(reg, smem, bits, result["vector"])
    return out


def _accesses(lines: Iterable[str], default_target: str = "") -> Iterator[dict]:
    found = 0
    for number, line, target, aliases in op_lines(lines, default_target, ("local_", "async_copy_global_to_local")):
        op = _OP.search(line)
        if not op or (op.group(1) == "local_alloc" and not re.search(r"local_alloc %", line)):
            continue
        tensor, mem = _TENSOR.search(line, op.end()), _MEMDESC.search(line, op.end())
        if not tensor or not mem:
            continue
        try:
            dist = expand(_encoding(line, tensor.end()), aliases)
            shared = expand(_encoding(line, mem.end()), aliases)
        except LayoutError:
            continue
        shape = tuple(int(x) for x in tensor.group(1).split("x") if x)
        mshape = tuple(int(x) for x in mem.group(1).split("x") if x)
        if mshape[-len(shape):] != shape or "shared" not in shared:
            continue
        yield {"line": number, "op": op.group(1), "dist": dist, "shared": shared, "shape": list(shape),
               "dtype": mem.group(2), "target": target or None}
        found += 1
        if found >= MAX_ACCESSES:
            break


def smem_accesses(lines: Iterable[str], default_target: str = "") -> list[dict]:
    """[{"line", "op", "label", "shape", "dtype", "dist", "shared", "target", "bank_conflicts",
    "wavefronts", "vector", "note"}] in text order; ``bank_conflicts`` is null where irlens cannot
    answer (an AMD target: ``unsupported`` says why; a layout it cannot lay out)."""
    out = []
    for access in _accesses(lines, default_target):
        access["label"] = OP_LABELS[access["op"]]
        if (access["target"] or "").startswith("hip"):
            access.update(bank_conflicts=None, wavefronts=None, vector=None, unsupported=UNSUPPORTED_AMD,
                          note="bank conflicts: AMD LDS not modelled")
            out.append(access)
            continue
        try:
            bits = primitive_bits(access["dtype"])
        except LayoutError:
            continue
        result = pair_conflicts(access["dist"], access["shared"], tuple(access["shape"]), bits)
        if result is None:
            continue
        n = result["bank_conflicts"]
        access.update(bank_conflicts=n, wavefronts=result["wavefronts"], vector=result["vector"],
                      access_bits=result["access_bits"],
                      note=f"▦ {n} bank conflict{'s' if n != 1 else ''} ({result['wavefronts']} wavefront"
                           f"{'s' if result['wavefronts'] != 1 else ''} per access, {result['access_bits']}-bit)")
        out.append(access)
    return out


def conflict_counts(accesses: list[dict]) -> dict[str, int]:
    """{"accesses", "with_conflicts", "unsupported"} of one text."""
    return {"accesses": len(accesses),
            "with_conflicts": sum(1 for a in accesses if a.get("bank_conflicts")),
            "unsupported": sum(1 for a in accesses if a.get("unsupported"))}


_COUNTS: dict[str, dict[str, int]] = {}
_COUNTS_MAX = 4096


def counts_by_digest(digest: str, load_text) -> dict[str, int]:
    """conflict_counts of a stored text, cached by its hash (the compilation page counts every pass)."""
    cached = _COUNTS.get(digest)
    if cached is not None:
        return cached
    text = load_text() or ""
    counts: dict[str, int] = {}
    if "local_" in text or "async_copy_global_to_local" in text:
        counts = conflict_counts(smem_accesses(io.StringIO(text)))
    if len(_COUNTS) >= _COUNTS_MAX:
        _COUNTS.pop(next(iter(_COUNTS)))
    _COUNTS[digest] = counts
    return counts
