"""Every ttg.convert_layout of one IR text with what its lowering costs: a line scan (aliases are
defined before use), each distinct (source, destination, shape, element type, target) decided once.
The element type is the op's own (a `!tt.ptr<...>` tensor is costed with 64-bit elements, i1 as i8);
one irlens cannot size leaves the conversion's kind and an unsized scratch, never a guessed width."""

from __future__ import annotations

import io
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from functools import lru_cache

from app.layouts.aliases import expand
from app.layouts.conversion import conversion, conversion_kind, minimal_dims
from app.layouts.convert import to_linear_layout
from app.layouts.errors import LayoutError
from app.layouts.ir_lines import op_lines
from app.layouts.linear import LinearLayout
from app.layouts.parse import Encoding, parse_encoding

_CVT = re.compile(r"(?:ttg|triton_gpu)\.convert_layout %[\w#.]+( \{[^{}]*\})? : "
                  r"tensor<((?:\d+x)+)([^,<>]*(?:<[^<>]*>)?), ")
_DST = re.compile(r"-> tensor<(?:\d+x)+[^,<>]*(?:<[^<>]*>)?, ")
MAX_CONVERSIONS = 5000  # per text; a page lists them, so bound the work

LABELS = {"none": "no data movement", "registers": "in registers", "shuffles": "warp shuffles",
          "shared": "through shared memory"}


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
    return line[start:]


@lru_cache(maxsize=1024)
def _linear(encoding: str, shape: tuple[int, ...]) -> LinearLayout:
    """An encoding's layout over a shape, built once: a text's conversions share a few encodings,
    and parsing and building them was half of a cold compilation page's conversion costs.
    (Layouts are not changed by their readers, so one object can serve every conversion.)"""
    return to_linear_layout(_parsed(encoding), list(shape))


@lru_cache(maxsize=1024)
def _parsed(encoding: str) -> Encoding:
    return parse_encoding(encoding)


@lru_cache(maxsize=4096)
def _cost(src: str, dst: str, shape: tuple[int, ...], elem: str, target: str, forced: bool) -> dict | None:
    try:
        s, d = _linear(src, shape), _linear(dst, shape)
    except LayoutError:
        return None
    try:
        return conversion(s, d, list(shape), elem, target, forced)
    except LayoutError:  # an element type irlens cannot size: the kind stands, the scratch is unknown
        kind = conversion_kind(s, d, forced)
        return {"kind": kind, "crosses": minimal_dims(s, d), "element_type": elem.strip(), "element_bits": None,
                "scratch_bytes": None if kind == "shared" else 0}


def _conversions(
    lines: Iterable[str], default_target: str = "",
) -> Iterator[tuple[int, str, str, tuple[int, ...], str, str, bool]]:
    """Each convert_layout as (line number, source, destination, shape, element type, target, forced
    to shuffles), its encodings with aliases expanded; at most MAX_CONVERSIONS. The module's
    `ttg.target` is the target; ``default_target`` (the compilation's) where it names none."""
    found = 0
    for number, line, target, aliases in op_lines(lines, default_target, ("convert_layout",)):
        m = _CVT.search(line)
        if not m:
            continue
        src_text = _encoding(line, m.end())
        rest = line[m.end() + len(src_text):]
        d = _DST.search(rest)
        if not d:
            continue
        try:
            src, dst = expand(src_text, aliases), expand(_encoding(rest, d.end()), aliases)
        except LayoutError:
            continue
        forced = bool(m.group(1)) and "force_warp_shuffle" in m.group(1)
        yield number, src, dst, tuple(int(x) for x in m.group(2).split("x") if x), m.group(3).strip(), target, forced
        found += 1
        if found >= MAX_CONVERSIONS:
            break


def convert_costs(lines: Iterable[str], default_target: str = "") -> list[dict]:
    """[{"line", "kind", "label", "shape", "dtype", "element_bits", "src", "dst", "target", ...}] in
    text order. ``dtype`` is the op's element type as written (what a link to the inspector must pass
    on as the element type); ``element_bits`` what one element takes in scratch (null: unknown type).
    The module's `ttg.target` sizes scratch; ``default_target`` (the compilation's) where it has none."""
    found: list[dict] = []
    for number, src, dst, shape, dtype, target, forced in _conversions(lines, default_target):
        cost = _cost(src, dst, shape, dtype, target, forced)
        if cost is None:
            continue
        found.append({"line": number, "kind": cost["kind"], "label": LABELS[cost["kind"]], "shape": list(shape),
                      "dtype": dtype, "element_bits": cost["element_bits"], "src": src, "dst": dst,
                      "target": target or None, "scratch_bytes": cost["scratch_bytes"],
                      "scratch_bytes_at_most": cost.get("scratch_bytes_at_most"),
                      "bank_conflicts": cost.get("bank_conflicts")})
    return found


@lru_cache(maxsize=4096)
def _kind(src: str, dst: str, shape: tuple[int, ...], forced: bool = False) -> str | None:
    """A conversion's kind alone: what the per-pass counts need, without sizing its scratch
    (most of a cold compilation page's conversion time). The kind does not depend on the element
    type or the target (Triton 3.9 decides it from the layouts alone)."""
    try:
        return conversion_kind(_linear(src, shape), _linear(dst, shape), forced)
    except LayoutError:
        return None


def summary(costs: list[dict]) -> list[dict]:
    """Counts per kind, costliest first: [{"kind", "label", "count"}]."""
    counts = Counter(c["kind"] for c in costs)
    return [{"kind": k, "label": LABELS[k], "count": counts[k]} for k in ("shared", "shuffles", "registers", "none")
            if counts[k]]


_COUNTS: dict[str, dict[str, int]] = {}
_COUNTS_MAX = 4096


def counts_by_kind(digest: str, load_text) -> dict[str, int]:
    """{kind: number of convert_layout ops} of a stored text, cached by its hash (the compilation
    page counts every pass; many passes share a text)."""
    cached = _COUNTS.get(digest)
    if cached is not None:
        return cached
    text = load_text() or ""
    counts: dict[str, int] = {}
    if "convert_layout" in text:
        kinds = Counter(_kind(src, dst, shape, forced)
                        for _n, src, dst, shape, _t, _g, forced in _conversions(io.StringIO(text)))
        counts = {kind: kinds[kind] for kind in ("shared", "shuffles", "registers", "none") if kinds[kind]}
    if len(_COUNTS) >= _COUNTS_MAX:
        _COUNTS.pop(next(iter(_COUNTS)))
    _COUNTS[digest] = counts
    return counts
