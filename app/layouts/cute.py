"""CuTe layouts as CuTe DSL's `cute` dialect prints them: `(128,16):(1,128)`, shape:stride.

A layout maps a coordinate to an index: the inner product of the coordinate with the stride. Shape
and stride are nested tuples of the same profile; a 1-D logical index i is first unfolded into a
coordinate colexicographically (the leftmost mode varies fastest, depth first), so
`(128,16):(1,128)` sends i to (i mod 128)·1 + (i div 128)·128: column-major, compact.

Printed leaves: an integer, `?` (known only at run time), `?{i64 div=16}` (dynamic, a multiple of
16), `1@0` (a unit step along coordinate 0 of a coordinate tensor: an arithmetic-tuple basis),
`_` (a coordinate left free). A composed layout prints as `S<B,M,S> o offset o layout`: the swizzle
functor after the layout. Pure: no dialect types here (app/highlight/cute_layouts.py reads those).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

Leaf = int | str  # an integer, or the printed text of a dynamic value or a basis (`?`, `1@0`)
Tree = Leaf | tuple  # nested tuples of leaves

_TOKEN = re.compile(r"\s*(\(|\)|,|\?(?:\{[^}]*\})?|-?\d+@\d+(?:@\d+)*|-?\d+|_)")
_SWIZZLE = re.compile(r"^S<(\d+),(\d+),(\d+)>$")


class LayoutSyntaxError(ValueError):
    pass


@dataclass(frozen=True)
class CuteLayout:
    shape: Tree
    stride: Tree

    @property
    def shapes(self) -> list[Leaf]:
        return flatten(self.shape)

    @property
    def strides(self) -> list[Leaf]:
        return flatten(self.stride)

    @property
    def rank(self) -> int:
        """Top-level modes."""
        return len(self.shape) if isinstance(self.shape, tuple) else 1

    @property
    def static(self) -> bool:
        """Every shape and stride leaf a number (so the mapping can be worked out)."""
        return all(isinstance(leaf, int) for leaf in (*self.shapes, *self.strides))

    @property
    def size(self) -> int | None:
        """How many coordinates it has (the product of its shape), None when a shape is dynamic."""
        shapes = self.shapes
        return math.prod(shapes) if all(isinstance(s, int) for s in shapes) else None

    @property
    def cosize(self) -> int | None:
        """One past the largest index it reaches (the memory it spans), for static layouts with
        non-negative strides; None otherwise."""
        if not self.static or any(d < 0 for d in self.strides):  # type: ignore[operator]
            return None
        return sum((s - 1) * d for s, d in zip(self.shapes, self.strides, strict=True)) + 1  # type: ignore[operator]

    def __call__(self, index: int) -> int:
        """The index a 1-D logical index maps to (static layouts only)."""
        total = 0
        for extent, step in zip(self.shapes, self.strides, strict=True):
            index, coordinate = divmod(index, extent)  # type: ignore[arg-type]
            total += coordinate * step  # type: ignore[operator]
        return total


def parse(text: str) -> CuteLayout:
    """`(128,16):(1,128)`, `4:1`, `((2,2),4):((1,1024),4096)`... Raises LayoutSyntaxError."""
    shape_text, colon, stride_text = _split_colon(text.strip())
    if not colon:
        raise LayoutSyntaxError(f"no ':' between shape and stride in {text!r}")
    shape, stride = parse_tuple(shape_text), parse_tuple(stride_text)
    if profile(shape) != profile(stride):
        raise LayoutSyntaxError(f"shape and stride differ in nesting in {text!r}")
    return CuteLayout(shape, stride)


def _split_colon(text: str) -> tuple[str, bool, str]:
    """At the ':' at depth 0 (a `?{i64 div=16}` leaf holds no ':', but a nested tuple may follow)."""
    depth = 0
    for position, char in enumerate(text):
        depth += char == "("
        depth -= char == ")"
        if char == ":" and depth == 0:
            return text[:position], True, text[position + 1 :]
    return text, False, ""


def parse_tuple(text: str) -> Tree:
    tokens = [match.group(1) for match in _iter_tokens(text)]
    tree, used = _read(tokens, 0)
    if used != len(tokens):
        raise LayoutSyntaxError(f"unexpected {tokens[used]!r} in {text!r}")
    return tree


def _iter_tokens(text: str):
    position = 0
    text = text.rstrip()
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None:
            raise LayoutSyntaxError(f"cannot read {text[position:]!r}")
        yield match
        position = match.end()


def _read(tokens: list[str], at: int) -> tuple[Tree, int]:
    if at >= len(tokens):
        raise LayoutSyntaxError("a tuple ends early")
    token = tokens[at]
    if token != "(":
        if token in (")", ","):
            raise LayoutSyntaxError(f"unexpected {token!r}")
        return (int(token) if re.fullmatch(r"-?\d+", token) else token), at + 1
    items: list[Tree] = []
    at += 1
    while True:
        item, at = _read(tokens, at)
        items.append(item)
        if at >= len(tokens):
            raise LayoutSyntaxError("a '(' is never closed")
        if tokens[at] == ")":
            return tuple(items), at + 1
        if tokens[at] != ",":
            raise LayoutSyntaxError(f"expected ',' or ')', got {tokens[at]!r}")
        at += 1


def flatten(tree: Tree) -> list[Leaf]:
    if isinstance(tree, tuple):
        return [leaf for item in tree for leaf in flatten(item)]
    return [tree]


def profile(tree: Tree) -> object:
    return tuple(profile(item) for item in tree) if isinstance(tree, tuple) else None


def show(tree: Tree) -> str:
    if isinstance(tree, tuple):
        return "(" + ",".join(show(item) for item in tree) + ")"
    return str(tree)


@dataclass(frozen=True)
class Swizzle:
    """CuTe's Swizzle<B, M, S>: offset ^ ((offset & mask) >> S), mask = (2^B - 1) << (M + S): the B bits
    from bit M+S up are XORed into the B bits from bit M up."""

    bits: int
    base: int
    shift: int

    def __call__(self, offset: int) -> int:
        mask = ((1 << self.bits) - 1) << (self.base + self.shift)
        return offset ^ ((offset & mask) >> self.shift)


def parse_swizzle(text: str) -> Swizzle | None:
    match = _SWIZZLE.match(text.strip())
    return Swizzle(*(int(group) for group in match.groups())) if match else None
