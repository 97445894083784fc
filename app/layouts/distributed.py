"""toLinearLayout for Triton's generic distributed encodings: blocked, slice, linear, and the
FMA dot operand of a blocked parent (LinearLayoutConversions.cpp, Triton 3.9)."""

from __future__ import annotations

from app.layouts.cga import cga_without_dim, check_shape, combine
from app.layouts.errors import LayoutError
from app.layouts.linear import LinearLayout, ensure_not_larger, ensure_not_smaller, identity_nd, out_names


def int_list(params: dict, key: str) -> list[int]:
    value = params.get(key)
    if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise LayoutError(f"parameter {key} missing or not a list of integers")
    return value


def matrix_order(rank: int, row_major: bool = True) -> list[int]:
    """Triton's getMatrixOrder: the last dim fastest; column-major swaps the two minor dims."""
    order = list(range(rank - 1, -1, -1))
    if not row_major and rank >= 2:
        order[0], order[1] = order[1], order[0]
    return order


def blocked(params: dict, shape: list[int]) -> LinearLayout:
    spt, tpw, wpc = int_list(params, "sizePerThread"), int_list(params, "threadsPerWarp"), int_list(params, "warpsPerCTA")
    order = int_list(params, "order")
    rank = len(order)
    if not len(spt) == len(tpw) == len(wpc) == rank or sorted(order) != list(range(rank)):
        raise LayoutError("blocked layout parameters disagree on the rank")
    check_shape(shape, rank, "the blocked layout")
    cta = identity_nd("register", spt, order) * identity_nd("lane", tpw, order) * identity_nd("warp", wpc, order)
    return combine(cta, params, shape, drop_registers=True)


def linear_bases(params: dict, in_dims: tuple[str, ...]) -> tuple[dict[str, list[list[int]]], int]:
    bases = {}
    rank = None
    for name in in_dims:
        vecs = params.get(name, [])
        if not isinstance(vecs, list):
            raise LayoutError(f"{name} bases are not a list")
        for v in vecs:
            if not isinstance(v, list) or (rank is not None and len(v) != rank):
                raise LayoutError(f"{name} bases disagree on the rank")
            rank = len(v)
            for x in v:
                if not isinstance(x, int) or x < 0 or x & (x - 1):
                    raise LayoutError(f"{name} basis {v} is not a power of two or zero per dim")
        bases[name] = [list(v) for v in vecs]
    if rank is None:
        raise LayoutError("a linear layout needs at least one basis")
    return bases, rank


def linear(params: dict, shape: list[int]) -> LinearLayout:
    """LinearEncodingAttr::toLinearLayout: fit the given bases to the shape along the register order."""
    bases, rank = linear_bases(params, ("register", "lane", "warp", "block"))
    check_shape(shape, rank, "the linear layout")
    # Triton 3.9's verifier: every basis is zero (a broadcast) or a single bit of one dimension, so
    # no distributed layout XORs coordinates (those are shared_linear's, for swizzled memory).
    for name, vecs in bases.items():
        for v in vecs:
            if sum(1 for x in v if x) > 1:
                raise LayoutError(f"{name} basis {v} mixes dimensions: Triton requires a linear layout to be "
                                  "a permutation matrix after removing broadcast bases")
    names = out_names(rank)
    ll = LinearLayout.from_bases(bases, names)
    order = order_per_dim(ll, "register", matrix_order(rank))
    permuted = [names[d] for d in order]
    labeled = {names[d]: shape[d] for d in order}
    ll = ll.transpose_outs(permuted)
    ll = ensure_not_smaller(ll, labeled)
    ll = ensure_not_larger(ll, labeled)
    return ll.transpose_outs(names)


def order_per_dim(ll: LinearLayout, in_dim: str, default: list[int]) -> list[int]:
    order: list[int] = []
    for v in ll.in_bases(in_dim):
        for i, x in enumerate(v):
            if x:
                if i not in order:
                    order.append(i)
                break
    for d in default:
        if d not in order:
            order.append(d)
    return order


def slice_(params: dict, shape: list[int], to_ll) -> LinearLayout:
    """SliceEncodingAttr::toLinearLayout: the parent at the shape with a 1 inserted, that dim dropped."""
    dim, parent = params.get("dim"), params.get("parent")
    if not isinstance(dim, int) or parent is None:
        raise LayoutError("slice needs dim and parent")
    if not 0 <= dim <= len(shape):
        raise LayoutError(f"slice dim {dim} is outside the shape's rank")
    parent_shape = list(shape[:dim]) + [1] + list(shape[dim:])
    pll = to_ll(parent, parent_shape)
    keep = [i for i in range(len(parent_shape)) if i != dim]
    bases = {k: [[v[i] for i in keep] for v in vs] for k, vs in pll.bases.items()}
    bases["register"] = [v for v in bases.get("register", []) if any(v)]
    return LinearLayout.from_bases(bases, out_names(len(shape)))


def broadcasted_dot_operand(shape: list[int], order: list[int], kdim: int, in_dim: str) -> LinearLayout:
    """broadcastedDotOperandLayout: identity along every dim but K, where it broadcasts."""
    names = out_names(len(shape))
    ret = LinearLayout.empty()
    for d in order:
        if d == kdim:
            ret = ret * LinearLayout.zeros1d(shape[d], in_dim, names[d])
        else:
            ret = ret * LinearLayout.identity1d(shape[d], in_dim, names[d])
    return ret


def fma_dot(op_idx: int, parent: dict, shape: list[int]) -> LinearLayout:
    """fmaDotToLinearLayout: each thread holds the whole K extent of its rows (or columns)."""
    order = int_list(parent, "order")
    rank = len(order)
    check_shape(shape, rank, "the dot operand")
    kdim = rank - 1 if op_idx == 0 else rank - 2
    thread_size = list(int_list(parent, "sizePerThread"))
    thread_size[kdim] = shape[kdim]
    rep_names = [out_names(rank)[d] for d in order]
    regs = identity_nd("register", thread_size, order)
    lanes = broadcasted_dot_operand(int_list(parent, "threadsPerWarp"), order, kdim, "lane")
    warps = broadcasted_dot_operand(int_list(parent, "warpsPerCTA"), order, kdim, "warp")
    cta = regs.transpose_outs(rep_names) * lanes.transpose_outs(rep_names) * warps.transpose_outs(rep_names)
    return combine(cta, cga_without_dim(parent, rank, kdim), shape)
