"""LinearLayout: bases per input dimension, combined by XOR (Triton's include/triton/Tools/LinearLayout.h).

An input index (register r, lane l, warp w, block b) maps to the XOR of the bases
whose bit is set in that index. Out dims are named ("dim0", "dim1", ...) and
their order matters: it is the order in which Triton's ``operator*`` grew them,
and later steps (repetition along a dimension) follow it.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.layouts.errors import LayoutError


def log2(n: int) -> int:
    if n <= 0 or n & (n - 1):
        raise LayoutError(f"{n} is not a power of two")
    return n.bit_length() - 1


def out_names(rank: int) -> list[str]:
    return [f"dim{i}" for i in range(rank)]


@dataclass
class LinearLayout:
    bases: dict[str, list[list[int]]]  # in dim -> one basis per bit; basis[i] is out dim i
    outs: list[tuple[str, int]]  # (out dim name, size)

    # -- construction ---------------------------------------------------------
    @staticmethod
    def empty() -> LinearLayout:
        return LinearLayout({}, [])

    @staticmethod
    def identity1d(size: int, in_dim: str, out_dim: str) -> LinearLayout:
        return LinearLayout({in_dim: [[1 << i] for i in range(log2(size))]}, [(out_dim, size)])

    @staticmethod
    def zeros1d(size: int, in_dim: str, out_dim: str, out_size: int = 1) -> LinearLayout:
        return LinearLayout({in_dim: [[0] for _ in range(log2(size))]}, [(out_dim, out_size)])

    @staticmethod
    def from_bases(bases: dict[str, list[list[int]]], names: list[str]) -> LinearLayout:
        """Out dim sizes inferred as Triton does: the smallest power of two above every basis value."""
        sizes = []
        for i, name in enumerate(names):
            top = 0
            for vecs in bases.values():
                for v in vecs:
                    top |= v[i]
            sizes.append((name, 1 << top.bit_length() if top else 1))
        return LinearLayout({k: [list(v) for v in vs] for k, vs in bases.items()}, sizes)

    # -- queries ------------------------------------------------------------------
    @property
    def out_dim_names(self) -> list[str]:
        return [n for n, _ in self.outs]

    def out_size(self, name: str) -> int:
        for n, s in self.outs:
            if n == name:
                return s
        return 1

    def in_size(self, name: str) -> int:
        return 1 << len(self.bases.get(name, []))

    def in_bases(self, name: str) -> list[list[int]]:
        return self.bases.get(name, [])

    def apply(self, ins: dict[str, int]) -> list[int]:
        out = [0] * len(self.outs)
        for name, value in ins.items():
            for bit, basis in enumerate(self.bases.get(name, [])):
                if value >> bit & 1:
                    out = [a ^ b for a, b in zip(out, basis)]
        return out

    # -- algebra ------------------------------------------------------------------
    def __mul__(self, outer: LinearLayout) -> LinearLayout:
        """Triton's operator*: outer's bases sit above inner's on shared out dims."""
        sizes: dict[str, int] = dict(self.outs)
        for name, size in outer.outs:
            sizes[name] = sizes.get(name, 1) * size
        names = list(sizes)
        bases: dict[str, list[list[int]]] = {}
        inner_names = self.out_dim_names
        for in_dim, vecs in self.bases.items():
            for v in vecs:
                bases.setdefault(in_dim, []).append(
                    [v[inner_names.index(n)] if n in inner_names else 0 for n in names])
        outer_names = outer.out_dim_names
        for in_dim, vecs in outer.bases.items():
            lst = bases.setdefault(in_dim, [])
            for v in vecs:
                lst.append([v[outer_names.index(n)] * self.out_size(n) if n in outer_names else 0 for n in names])
        return LinearLayout(bases, [(n, sizes[n]) for n in names])

    def transpose_outs(self, names: list[str]) -> LinearLayout:
        idx = [self.out_dim_names.index(n) for n in names]
        return LinearLayout({k: [[v[i] for i in idx] for v in vs] for k, vs in self.bases.items()},
                            [self.outs[i] for i in idx])

    def transpose_ins(self, names: list[str]) -> LinearLayout:
        return LinearLayout({n: self.bases[n] for n in names if n in self.bases}, list(self.outs))

    def with_in_dims(self, names: list[str]) -> LinearLayout:
        """Every named in dim present (possibly empty), in this order; others dropped."""
        return LinearLayout({n: self.bases.get(n, []) for n in names}, list(self.outs))

    def total_in_bits(self) -> int:
        return sum(len(v) for v in self.bases.values())


def identity_nd(in_dim: str, shape: list[int], order: list[int]) -> LinearLayout:
    """Triton's identityStandardND: most minor dim (order[0]) first; outs stay in that order."""
    names = out_names(len(shape))
    ret = LinearLayout.empty()
    for d in order:
        ret = ret * LinearLayout.identity1d(shape[d], in_dim, names[d])
    return ret


def ensure_not_smaller(layout: LinearLayout, shape: dict[str, int]) -> LinearLayout:
    """Repeat along registers until each out dim covers the shape (ensureLayoutNotSmallerThan)."""
    ret = layout
    for name in layout.out_dim_names:
        actual, want = layout.out_size(name), shape[name]
        if actual < want:
            ret = ret * LinearLayout.identity1d(want // actual, "register", name)
    return ret


def ensure_not_larger(layout: LinearLayout, shape: dict[str, int], broadcast_registers: bool = True) -> LinearLayout:
    """Fold a layout bigger than the shape (ensureLayoutNotLargerThan): register bases past the shape
    are dropped, other in dims' bases past it become 0 (broadcast)."""
    bases = {k: [list(v) for v in vs] for k, vs in layout.bases.items()}
    dropped: set[int] = set()
    for i, name in enumerate(layout.out_dim_names):
        actual, want = layout.out_size(name), shape[name]
        if actual <= want:
            continue
        found = []
        for in_dim, vecs in bases.items():
            for j, v in enumerate(vecs):
                if v[i]:
                    found.append((in_dim, j, v[i]))
        found.sort(key=lambda t: -t[2])  # stable, like llvm::sort on distinct values here
        for in_dim, j, value in found:
            if value < want:
                break
            if in_dim == "register" and broadcast_registers:
                dropped.add(j)
            else:
                bases[in_dim][j][i] = 0
    if "register" in bases:
        bases["register"] = [v for j, v in enumerate(bases["register"]) if j not in dropped]
    return LinearLayout.from_bases(bases, layout.out_dim_names)
