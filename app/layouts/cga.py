"""Blocks (CTAs) of a cluster, and fitting a one-block layout to a shape (combineCtaCgaWithShape)."""

from __future__ import annotations

from app.layouts.errors import LayoutError
from app.layouts.linear import LinearLayout, ensure_not_larger, ensure_not_smaller, log2, out_names


def check_shape(shape: list[int], rank: int, what: str) -> None:
    if len(shape) != rank:
        raise LayoutError(f"{what} has rank {rank}; the shape {'x'.join(map(str, shape))} has rank {len(shape)}")
    for s in shape:
        if s <= 0 or s & (s - 1):
            raise LayoutError(f"shape {'x'.join(map(str, shape))}: {s} is not a power of two, "
                              "so Triton cannot lay it out")


def cga_layout(params: dict, rank: int) -> LinearLayout:
    """The block -> coordinate layout: Triton 3.9's ``CGALayout = [[...]]`` bases, or the older
    ``CTAsPerCGA``/``CTASplitNum``/``CTAOrder`` triple (Triton 3.1's makeCgaLayout)."""
    names = out_names(rank)
    if "CGALayout" in params:
        bases = params["CGALayout"]
        if any(len(b) != rank for b in bases):
            raise LayoutError("CGALayout bases do not match the layout's rank")
        return LinearLayout.from_bases({"block": bases}, names)
    if "CTAsPerCGA" in params:
        ctas, split = params["CTAsPerCGA"], params.get("CTASplitNum", params["CTAsPerCGA"])
        order = params.get("CTAOrder", list(range(rank - 1, -1, -1)))
        ret = LinearLayout.empty()
        for d in order:
            if ctas[d] % split[d]:
                raise LayoutError("CTAsPerCGA is not a multiple of CTASplitNum")
            ret = ret * LinearLayout.identity1d(split[d], "block", names[d]) * \
                LinearLayout.zeros1d(ctas[d] // split[d], "block", names[d])
        return ret.transpose_outs(names)
    return LinearLayout({"block": []}, [(n, 1) for n in names])


def cga_without_dim(params: dict, rank: int, dim: int) -> dict:
    """A dot operand's blocks: the parent's, never split along K."""
    out = dict(params)
    if "CGALayout" in params:
        out["CGALayout"] = [[0 if i == dim else v for i, v in enumerate(b)] for b in params["CGALayout"]]
    elif "CTASplitNum" in params:
        out["CTASplitNum"] = [1 if i == dim else v for i, v in enumerate(params["CTASplitNum"])]
    return out


def shape_per_cta(params: dict, shape: list[int]) -> list[int]:
    cga = ensure_not_larger(cga_layout(params, len(shape)), dict(zip(out_names(len(shape)), shape)))
    return [max(1, s // cga.out_size(n)) for s, n in zip(shape, out_names(len(shape)))]


def combine(cta: LinearLayout, params: dict, shape: list[int], drop_registers: bool = False) -> LinearLayout:
    """Triton's combineCtaCgaWithShape: repeat or fold the one-block layout to the shape, then add blocks.

    Folding zeroes the bases that reach past the shape; Triton 3.9 drops such register bases
    instead for blocked layouts (``drop_registers``), and keeps them, zeroed, for the mma kinds."""
    rank = len(shape)
    names = out_names(rank)
    labeled = dict(zip(names, shape))
    cga = ensure_not_larger(cga_layout(params, rank), labeled).transpose_outs(cta.out_dim_names)
    cta_shape = {n: max(1, labeled[n] // cga.out_size(n)) for n in cta.out_dim_names}
    cta = ensure_not_smaller(cta, cta_shape)
    cta = ensure_not_larger(cta, cta_shape, broadcast_registers=drop_registers)
    ret = (cta * cga).transpose_outs(names)
    for n in names:
        if ret.out_size(n) != labeled[n]:
            raise LayoutError(f"layout covers {ret.out_size(n)} along {n}, not {labeled[n]}")
    return ret


__all__ = ["cga_layout", "cga_without_dim", "check_shape", "combine", "log2", "shape_per_cta"]
