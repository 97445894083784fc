"""CuTe DSL's layout types explained in plain words, as Triton's encodings are (app/highlight/layouts.py).

Types read (as nvidia-cutlass-dsl 4.x prints them):

- `!cute.layout<"(128,16):(1,128)">`: a layout, shape:stride (app/layouts/cute.py does the algebra);
- `!cute.composed_layout<"S<3,4,3> o 0 o ((128,8),1,4,7):((32,1),0,8,4096)">`: a swizzle after a layout;
- `!cute.memref<f32, gmem, align<16>, S<3,4,3>, "(?,?,?):(?{i64},1,?{i64})">`: a tensor: element type,
  memory space, alignment, swizzle, layout;
- `!cute.coord_tensor<"(0,0,0)", "(?,?,?):(1@1,1@0,1@2)">`: coordinates, its layout's strides bases;
- `!cute.tiled_copy<..., layout_copy_tv = <"...">, tiler_mn = <"...">>` and `!cute.tiled_mma<...,
  atom_layout_MNK = <"...">>`: their thread-value layouts;
- `!cute.shape<"...">`, `!cute.stride<"...">`, `!cute.coord<"...">`, `!cute.tile<"...">`, `!cute.int_tuple<"...">`.

Every quoted `shape:stride` in a type is explained; nothing here raises on odd input.
"""

from __future__ import annotations

import re

from app.highlight.layout_model import Layout, LayoutField
from app.layouts.cute import CuteLayout, LayoutSyntaxError, parse, parse_swizzle, show

_TYPE = re.compile(r"^!cute(?:_nvgpu)?\.([\w.]+)<(.*)>$", re.DOTALL)
_QUOTED = re.compile(r'"([^"\n]*)"')
_NAMED_LAYOUT = re.compile(r'(\w+) = <"([^"\n]*)">')
_SPACES = {"gmem": "global memory", "smem": "shared memory", "rmem": "registers", "tmem": "tensor memory"}
# the types whose inline uses a page explains (the rest, tuples and atoms, are shown as they are)
CUTE_EXPLAINED = "layout|composed_layout|memref|coord_tensor|tiled_copy|tiled_mma"
_SHOWN = 8  # mapped indexes listed per layout
MAX_EXPLAINED = 6  # quoted layouts explained per type (a tiled copy has two or three)
_DYNAMIC = re.compile(r"^\?(?:\{(.*)\})?$")
_BASIS = re.compile(r"^(-?\d+)@(\d+(?:@\d+)*)$")


def is_cute_type(text: str) -> bool:
    return text.startswith(("!cute.", "!cute_nvgpu."))


def explain_type(definition: str) -> Layout:
    """One CuTe type as printed, explained."""
    definition = definition.strip()
    match = _TYPE.match(definition)
    if match is None:
        return Layout(alias=None, kind="unknown", definition=definition, line=None, summary="not a CuTe type")
    kind, inner = match.group(1), match.group(2)
    layout = Layout(alias=None, kind=kind, definition=definition, line=None, dialect="cute")
    parts: list[str] = []
    if kind == "memref":
        head = inner.split('"', 1)[0]
        words = [word.strip() for word in _top_level_commas(head) if word.strip()]
        if words:
            layout.fields.append(LayoutField("element", words[0], f"each element is {words[0]}"))
        for word in words[1:]:
            if word in _SPACES:
                layout.fields.append(LayoutField("memory", word, f"the tensor lives in {_SPACES[word]}"))
                parts.append(f"a {words[0]} tensor in {_SPACES[word]}")
            elif word.startswith("align<"):
                layout.fields.append(LayoutField("align", word, f"its base is aligned to {word[6:-1]} bytes"))
            elif parse_swizzle(word):
                layout.fields.append(LayoutField("swizzle", word, _swizzle_words(word)))
    named = _NAMED_LAYOUT.findall(inner)
    texts = _QUOTED.findall(inner)
    if kind == "coord_tensor" and len(texts) == 2:  # its first coordinate, then its layout
        quoted = [("offset", texts[0]), ("layout", texts[1])]
    else:
        quoted = [(name, text) for name, text in named] or [("layout", text) for text in texts]
    for name, text in quoted[:MAX_EXPLAINED]:
        field, summary = _explain_quoted(kind, name, text)
        layout.fields.append(field)
        if summary:
            parts.append(summary)
    layout.summary = "; ".join(dict.fromkeys(parts)) or f"CuTe {kind}"
    return layout


def _top_level_commas(text: str) -> list[str]:
    """`f32, smem, align<128>, S<3,4,3>` split at the commas outside `<...>`."""
    parts, depth, start = [], 0, 0
    for position, char in enumerate(text):
        depth += (char == "<") - (char == ">")
        if char == "," and depth == 0:
            parts.append(text[start:position])
            start = position + 1
    parts.append(text[start:])
    return parts


def _explain_quoted(kind: str, name: str, text: str) -> tuple[LayoutField, str | None]:
    """One quoted value: a layout (shape:stride, maybe composed), or a plain tuple."""
    if " o " in text:  # composed: swizzle o offset o layout
        pieces = [piece.strip() for piece in text.split(" o ")]
        swizzle = _swizzle_words(pieces[0]) if parse_swizzle(pieces[0]) else f"{pieces[0]} applied"
        inner_field, inner_summary = _explain_quoted(kind, name, pieces[-1])
        offset = f", from offset {pieces[1]}" if len(pieces) == 3 and pieces[1] != "0" else ""
        return (LayoutField(name, text, f"{inner_field.explanation} Then {swizzle}{offset}."),
                f"swizzled {inner_summary}" if inner_summary else None)
    if text.startswith("[") and text.endswith("]"):  # a tiler: one layout per mode
        modes = [mode.strip() for mode in text[1:-1].split(";")]
        return LayoutField(name, text, "a tiler, one layout per mode: " + "; ".join(
            f"mode {position} by {mode}" for position, mode in enumerate(modes))), None
    if ":" not in text:
        what = {"shape": "a shape", "stride": "a stride", "coord": "a coordinate", "tile": "a tiler",
                "int_tuple": "an integer tuple"}.get(kind, "a tuple")
        return LayoutField(name, text, f"{what}: {text}" + (" (? is known only at run time)" if "?" in text else "")), None
    try:
        cute = parse(text)
    except LayoutSyntaxError as error:
        return LayoutField(name, text, f"a layout irlens cannot read ({error})"), None
    return LayoutField(name, text, mapping_words(cute)), _summary(name, cute)


def _summary(name: str, cute: CuteLayout) -> str:
    size = cute.size
    what = "thread-value layout" if name.startswith(("layout_copy_tv", "tv")) else "layout"
    count = f"{size} elements" if size is not None else "a run-time number of elements"
    return f"{what} {show(cute.shape)}:{show(cute.stride)} over {count}"


def mapping_words(cute: CuteLayout) -> str:
    """What the layout does, with its numbers: each mode's extent and step, the index formula, the
    first indexes it maps to, and whether it is compact."""
    modes = []
    for position, (extent, step) in enumerate(zip(cute.shapes, cute.strides, strict=True)):
        modes.append(f"mode {position}: {_extent_words(extent)}, {_step_words(step, extent == 1)}")
    nested = " (modes flattened, depth first)" if any(isinstance(m, tuple) for m in (
        cute.shape if isinstance(cute.shape, tuple) else ())) else ""
    words = [f"Coordinate (c0, c1, ...){nested} maps to the index Σ cᵢ·strideᵢ; " + "; ".join(modes) + "."]
    if cute.static:
        size = cute.size or 0
        shown = ", ".join(f"{i}→{cute(i)}" for i in range(min(size, _SHOWN)))
        more = ", ..." if size > _SHOWN else ""
        words.append(f"Logical index i (leftmost mode fastest) goes to: {shown}{more}.")
        cosize = cute.cosize
        if cosize is not None:
            if cosize == size:
                words.append(f"It is compact: its {size} elements fill indexes 0..{cosize - 1} once each.")
            else:
                words.append(f"Its {size} elements span {cosize} index{'es' if cosize != 1 else ''}"
                             + (" (some share an index: a broadcast)" if cosize < size else " (with gaps)") + ".")
    return " ".join(words)


def _extent_words(extent) -> str:
    if isinstance(extent, int):
        return f"{extent} coordinate{'s' if extent != 1 else ''}"
    dynamic = _DYNAMIC.match(str(extent))
    if dynamic:
        return "a run-time extent" + (f" ({dynamic.group(1)})" if dynamic.group(1) else "")
    return f"extent {extent}"


def _step_words(step, extent_one: bool = False) -> str:
    if isinstance(step, int):
        if step == 0:
            return "stride 0" if extent_one else "stride 0 (every coordinate shares one index: a broadcast)"
        return "stride 1 (consecutive)" if step == 1 else f"stride {step}"
    dynamic = _DYNAMIC.match(str(step))
    if dynamic:
        return "a run-time stride" + (f" ({dynamic.group(1)})" if dynamic.group(1) else "")
    basis = _BASIS.match(str(step))
    if basis:
        return f"steps {basis.group(1)} along coordinate {basis.group(2)} (a coordinate tensor's basis)"
    return f"stride {step}"


def _swizzle_words(text: str) -> str:
    swizzle = parse_swizzle(text)
    if swizzle is None:
        return f"swizzle {text}"
    low, high = swizzle.base, swizzle.base + swizzle.shift
    return (f"the swizzle {text} XORs the {swizzle.bits} index bits from bit {high} up into the bits from "
            f"bit {low} up (index ^ ((index >> {swizzle.shift}) & {((1 << swizzle.bits) - 1) << low})), spreading "
            f"rows over shared-memory banks; e.g. 0→{swizzle(0)}, {1 << high}→{swizzle(1 << high)}")
