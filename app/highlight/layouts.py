"""Layout encodings in TTGIR, explained in plain words.

``find_layouts(text)`` collects the encoding alias definitions at the top (and bottom) of a
TTGIR module: ``#blocked1 = #ttg.blocked<{...}>``, ``#mma``, ``#shared``, ``#linear``,
``#smem``, ``#tmem``, and the old ``#triton_gpu.*`` spellings. ``explain_encoding(text)``
explains one encoding as printed, aliased or inline (``#ttg.slice<...>``, ``#ttg.dot_op<...>``,
``#ttng.tensor_memory_encoding<...>``, ``#gluon.coalesced_encoding``...).

Each field gets an explanation with the actual numbers, e.g. ``sizePerThread = [1, 8]`` →
"each thread holds 8 consecutive elements along dim 1 (1 along dim 0)", and each layout a
one-sentence summary. Unknown kinds and fields get a generic explanation; nothing here
raises on odd input.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

__all__ = [
    "Layout",
    "LayoutField",
    "explain_encoding",
    "find_layouts",
    "read_encoding",
]

# dialects whose attributes are layouts (or memory spaces) worth explaining
_LAYOUT_DIALECTS = ("ttg", "triton_gpu", "ttng", "triton_nvidia_gpu", "gluon", "amdg", "amdgpu")
_DIALECT_RE = "|".join(_LAYOUT_DIALECTS)
_ALIAS_BODY = r"#(?!loc\d*\s*=)([\w$-]+)[ \t]*=[ \t]*(#(?:" + _DIALECT_RE + r")\.[^\n]*?)[ \t]*$"
_ALIAS_DEF = re.compile(_ALIAS_BODY, re.MULTILINE)  # at the start of the text
# Every other definition follows a newline: a literal "\n#" lets the regex engine skip ahead,
# where "^" in MULTILINE mode tries every position (15x slower on a 7 MB module).
_ALIAS_DEF_AFTER_NEWLINE = re.compile("\n" + _ALIAS_BODY, re.MULTILINE)
_HEAD = re.compile(r"#([\w$]+)\.([\w$.]+)")
_ATTRIBUTE_NAME = re.compile(r"#[\w$.-]+")
# what an explainer may raise on a value it did not expect
_ODD_VALUE = (ValueError, TypeError, KeyError, IndexError, AttributeError, ZeroDivisionError, OverflowError)


@dataclass
class LayoutField:
    """One parameter of an encoding: ``name = value`` as printed, and what it means."""

    name: str
    value: str
    explanation: str


@dataclass
class Layout:
    """One encoding, explained."""

    alias: str | None  # "blocked1" (no '#'), None for an inline encoding
    kind: str  # "blocked", "nvidia_mma", "slice", ... (the mnemonic, without dialect)
    definition: str  # the full text as printed, "#ttg.blocked<{...}>"
    line: int | None  # 1-based line of the alias definition
    fields: list[LayoutField] = field(default_factory=list)
    summary: str = ""
    dialect: str = ""  # "ttg", "triton_gpu", "ttng", "gluon", ...


def find_layouts(text: str) -> dict[str, Layout]:
    """Every layout alias defined in a module, by alias name without '#' ("blocked1")."""
    layouts: dict[str, Layout] = {}
    line = 1
    last = 0
    first = _ALIAS_DEF.match(text)
    for match in (*([first] if first else []), *_ALIAS_DEF_AFTER_NEWLINE.finditer(text)):
        start = match.start(1) - 1  # the '#'
        line += text.count("\n", last, start)
        last = start
        alias, definition = match.group(1), match.group(2)
        layout = explain_encoding(definition, aliases=layouts)
        layout.alias = alias
        layout.line = line
        layouts[alias] = layout
    return layouts


def read_encoding(text: str, start: int = 0) -> str:
    """The encoding that starts at ``text[start]`` ('#'), up to its balanced closing '>'.

    ``read_encoding("tensor<128xf32, #ttg.slice<{dim = 1, parent = #blocked}>>", 17)`` gives
    ``"#ttg.slice<{dim = 1, parent = #blocked}>"``. An alias or a bare attribute
    (``#blocked``, ``#gluon.auto_encoding``) is returned as it is.
    """
    match = _ATTRIBUTE_NAME.match(text, start)
    if match is None:
        return ""
    end = match.end()
    if end >= len(text) or text[end] != "<":
        return match.group()
    close = _matching_close(text, end)
    return text[start : close + 1] if close is not None else text[start:].rstrip()


def explain_encoding(definition: str, aliases: Mapping[str, Layout] | None = None) -> Layout:
    """Explain one encoding as printed (``#ttg.blocked<{...}>``, ``#ttg.slice<...>``, ...).

    ``aliases`` (from :func:`find_layouts`) lets a slice or dot_op name what its parent is.
    """
    definition = definition.strip()
    head = _HEAD.match(definition)
    if head is None and not re.fullmatch(r"#[\w$-]+", definition):
        return Layout(
            alias=None, kind="unknown", definition=definition, line=None, summary="not a layout encoding"
        )
    if head is None:
        alias = definition.lstrip("#")
        target = (aliases or {}).get(alias)
        summary = f"alias #{alias}" + (f": {target.summary}" if target else "; see its definition")
        return Layout(alias=None, kind="alias", definition=definition, line=None, summary=summary)
    dialect, kind = head.group(1), head.group(2)
    body = definition[head.end() :]
    params: list[tuple[str, str]] = []
    if body.startswith("<"):
        close = _matching_close(body, 0)
        inner = body[1:close] if close is not None else body[1:].rstrip(">")
        params = _parse_params(inner)
    layout = Layout(alias=None, kind=kind, definition=definition, line=None, dialect=dialect)
    context = _Context(aliases or {}, dict(params))
    explainers = _FIELD_EXPLAINERS.get(kind, {})
    for name, value in params:
        explain = explainers.get(name) or _COMMON_FIELDS.get(name) or _generic_field
        try:
            text = explain(name, value, context)
        except _ODD_VALUE:  # odd values never break the page
            text = _generic_field(name, value, context)
        layout.fields.append(LayoutField(name=name, value=value, explanation=text))
    try:
        layout.summary = _SUMMARIES.get(kind, _generic_summary)(kind, context)
    except _ODD_VALUE:
        layout.summary = _generic_summary(kind, context)
    return layout


# --- parsing -------------------------------------------------------------------------

_OPEN = {"<": ">", "[": "]", "{": "}", "(": ")"}


def _matching_close(text: str, start: int) -> int | None:
    """Index of the bracket closing ``text[start]``, skipping strings and nested brackets."""
    stack: list[str] = []
    index = start
    while index < len(text):
        char = text[index]
        if char == '"':
            index += 1
            while index < len(text) and text[index] != '"':
                index += 2 if text[index] == "\\" else 1
        elif char in _OPEN:
            stack.append(_OPEN[char])
        elif stack and char == stack[-1]:
            stack.pop()
            if not stack:
                return index
        index += 1
    return None


def _split_top(text: str, separator: str = ",") -> list[str]:
    """Split on ``separator`` outside brackets and strings."""
    parts: list[str] = []
    depth = 0
    current: list[str] = []
    in_string = False
    for index, char in enumerate(text):
        if in_string:
            current.append(char)
            if char == '"' and text[index - 1] != "\\":
                in_string = False
            continue
        if char == '"':
            in_string = True
        elif char in _OPEN:
            depth += 1
        elif char in ">]})" and depth > 0:
            depth -= 1
        elif char == separator and depth == 0:
            parts.append("".join(current).strip())
            current = []
            continue
        current.append(char)
    tail = "".join(current).strip()
    if tail:
        parts.append(tail)
    return parts


def _parse_params(inner: str) -> list[tuple[str, str]]:
    """``{a = 1, b = [2]}, c = 3`` or ``[32:+4] {order = ...}`` → [(name, value text)]."""
    params: list[tuple[str, str]] = []
    inner = inner.strip()
    # padded_shared: `[32:+4, 64:+8] {order = ...}`: the leading interval list has no name
    if inner.startswith("["):
        close = _matching_close(inner, 0)
        if close is not None and ":" in inner[: close + 1]:
            params.append(("intervals", inner[: close + 1]))
            inner = inner[close + 1 :].strip().lstrip(",").strip()
    for part in _split_top(inner):
        if part.startswith("{") and part.endswith("}"):
            params.extend(_parse_params(part[1:-1]))
            continue
        name, sep, value = part.partition("=")
        if sep and re.fullmatch(r"\s*[\w$.\"-]+\s*", name):
            params.append((name.strip().strip('"'), value.strip()))
        elif part:
            params.append((part, "true"))  # a unit attribute
    return params


def _value(text: str):
    """Parse a printed attribute value into ints, bools, lists and strings."""
    text = text.strip()
    if text.startswith("[") and text.endswith("]"):
        return [_value(part) for part in _split_top(text[1:-1])]
    if text.startswith("{") and text.endswith("}"):
        result = {}
        for part in _split_top(text[1:-1]):
            name, _, value = part.partition("=")
            result[name.strip()] = _value(value)
        return result
    if re.fullmatch(r"-?\d+(?:\s*:\s*i\d+)?", text):
        return int(text.split(":")[0])
    if text in ("true", "false"):
        return text == "true"
    return text


def _ints(text: str) -> list[int] | None:
    value = _value(text)
    if isinstance(value, list) and all(isinstance(item, int) for item in value):
        return value
    return None


def _bases(text: str) -> list[list[int]] | None:
    value = _value(text)
    if isinstance(value, list) and all(
        isinstance(item, list) and all(isinstance(x, int) for x in item) for item in value
    ):
        return value
    return None


@dataclass
class _Context:
    aliases: Mapping[str, Layout]
    params: dict[str, str]

    def ints(self, name: str) -> list[int] | None:
        return _ints(self.params[name]) if name in self.params else None

    def int(self, name: str) -> int | None:
        value = _value(self.params.get(name, ""))
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    def flag(self, name: str) -> bool | None:
        value = _value(self.params.get(name, ""))
        return value if isinstance(value, bool) else None


# --- words ---------------------------------------------------------------------------


def _plural(count: int, noun: str, plural: str | None = None) -> str:
    return f"{count} {noun if count == 1 else (plural or noun + 's')}"


def _dims_text(values: list[int]) -> str:
    """[4, 1] → '4 along dim 0, 1 along dim 1'."""
    return ", ".join(f"{value} along dim {dim}" for dim, value in enumerate(values))


def _shape(values: list[int]) -> str:
    return "×".join(str(value) for value in values)


def _tile(values: list[int]) -> str:
    """[32, 64] → 'a 32×64 tile'; [128] → '128 elements'."""
    if len(values) == 1:
        return _plural(values[0], "element")
    return f"a {_shape(values)} tile"


def _verb(count: int, singular: str, plural: str) -> str:
    return singular if count == 1 else plural


def _fastest_dim(context: _Context, rank: int) -> int:
    order = context.ints("order")
    if order and 0 <= order[0] < rank:
        return order[0]
    return rank - 1


def _parent_text(value: str, context: _Context) -> str:
    alias = value.lstrip("#")
    target = context.aliases.get(alias)
    if target is not None:
        return f"{value} ({target.kind}: {target.summary})"
    if value.startswith("#") and "." in value.split("<")[0]:
        return f"the inline {value.split('<')[0].split('.', 1)[1]} layout"
    return value


def _bases_text(name: str, bases: list[list[int]]) -> str:
    if not bases:
        return f"no {name} bits: a single {name}" if name != "block" else "a single CTA (no block bits)"
    count = 2 ** len(bases)
    noun = {
        "register": "registers per thread",
        "lane": "lanes per warp",
        "warp": "warps",
        "block": "CTAs",
        "offset": "shared-memory offsets",
    }.get(name, f"values of {name}")
    moves = ", ".join(
        f"{'bit' if index else name + ' bit'} {index} moves to {base}"
        + (" (a broadcast: no new elements)" if not any(base) else "")
        for index, base in enumerate(bases)
    )
    return f"{count} {noun}; {moves}"


def _linear_tile(bases_by_name: dict[str, list[list[int]]]) -> list[int] | None:
    all_bases = [base for bases in bases_by_name.values() for base in bases]
    if not all_bases:
        return None
    rank = max(len(base) for base in all_bases)
    tile = []
    for dim in range(rank):
        combined = 0
        for base in all_bases:
            if dim < len(base):
                combined |= base[dim]
        tile.append(combined + 1)
    return tile


# --- per-field explanations ------------------------------------------------------------

Explain = Callable[[str, str, _Context], str]


def _generic_field(name: str, value: str, context: _Context) -> str:
    return f"{name} is {value} (no explanation for this field yet)"


def _size_per_thread(name: str, value: str, context: _Context) -> str:
    sizes = _ints(value)
    if not sizes:
        return _generic_field(name, value, context)
    if len(sizes) == 1:
        return f"each thread holds {_plural(sizes[0], 'consecutive element')}"
    if math.prod(sizes) == 1:
        return "each thread holds a single element (1 along each dim)"
    fastest = _fastest_dim(context, len(sizes))
    others = ", ".join(f"{size} along dim {dim}" for dim, size in enumerate(sizes) if dim != fastest)
    return (
        f"each thread holds {_plural(sizes[fastest], 'consecutive element')} along dim {fastest} ({others})"
    )


def _threads_per_warp(name: str, value: str, context: _Context) -> str:
    counts = _ints(value)
    if not counts:
        return _generic_field(name, value, context)
    total = math.prod(counts)
    if len(counts) == 1:
        return f"a warp's {total} threads lie along the one dim"
    return f"a warp's {total} threads are arranged {_shape(counts)} ({_dims_text(counts)})"


def _warps_per_cta(name: str, value: str, context: _Context) -> str:
    counts = _ints(value)
    if not counts:
        return _generic_field(name, value, context)
    total = math.prod(counts)
    if len(counts) == 1:
        return f"the CTA's {_plural(total, 'warp')} lie along the one dim"
    return f"the CTA's {_plural(total, 'warp')} are arranged {_shape(counts)} ({_dims_text(counts)})"


def _order(name: str, value: str, context: _Context) -> str:
    order = _ints(value)
    if not order:
        return _generic_field(name, value, context)
    if len(order) == 1:
        return f"dim {order[0]} is the only dim"
    rest = ", then ".join(f"dim {dim}" for dim in order[1:])
    return f"dim {order[0]} is fastest-varying, then {rest}"


def _ctas_per_cga(name: str, value: str, context: _Context) -> str:
    counts = _ints(value)
    if counts and math.prod(counts) == 1:
        return "a single CTA per cluster (no multi-CTA split)"
    return f"CTAs per cluster (CGA) along each dim: {value}"


def _cta_split(name: str, value: str, context: _Context) -> str:
    counts = _ints(value)
    if counts and math.prod(counts) == 1:
        return "the tensor is not split across CTAs"
    return f"how many pieces the tensor is split into across the cluster's CTAs, per dim: {value}"


def _cta_order(name: str, value: str, context: _Context) -> str:
    return f"order of the CTAs in the cluster: {_order(name, value, context)}"


def _cga_layout(name: str, value: str, context: _Context) -> str:
    bases = _bases(value)
    if bases is not None:
        return "multi-CTA layout: " + _bases_text("block", bases)
    return f"multi-CTA (cluster) layout: {value}"


def _mma_version(name: str, value: str, context: _Context) -> str:
    version = _value(value)
    meaning = {
        1: "Volta mma (sm_70)",
        2: "Ampere mma.sync (sm_80+; also used on Ada and as a fallback on Hopper)",
        3: "Hopper wgmma (warp-group MMA, sm_90)",
        5: "Blackwell tcgen05 MMA (sm_100)",
    }.get(version)
    return f"version {version}: {meaning}" if meaning else f"MMA version {version}"


def _mma_minor(name: str, value: str, context: _Context) -> str:
    return f"minor version {value} (a variant of the major version; 0 is the default)"


def _mma_instr_shape(name: str, value: str, context: _Context) -> str:
    shape = _ints(value)
    if not shape:
        return _generic_field(name, value, context)
    major = context.int("versionMajor")
    if len(shape) == 3:
        m, n, k = shape
        text = f"one instruction computes an M×N = {m}×{n} tile with K = {k}"
        if major == 3:
            text += f" per warp (a warp group of 4 warps computes {4 * m}×{n})"
        return text
    if len(shape) == 2:
        return f"one instruction computes an M×N = {shape[0]}×{shape[1]} tile per warp"
    return f"instruction shape {_shape(shape)}"


def _mfma_version(name: str, value: str, context: _Context) -> str:
    version = _value(value)
    meaning = {
        1: "CDNA1 (MI100, gfx908)",
        2: "CDNA2 (MI200, gfx90a)",
        3: "CDNA3 (MI300, gfx942)",
        4: "CDNA4 (MI350, gfx950)",
    }.get(version)
    return f"MFMA version {version}: {meaning}" if meaning else f"MFMA version {version}"


def _wmma_version(name: str, value: str, context: _Context) -> str:
    version = _value(value)
    meaning = {1: "RDNA3 (gfx11)", 2: "RDNA4 (gfx12)", 3: "gfx1250"}.get(version)
    return f"WMMA version {version}: {meaning}" if meaning else f"WMMA version {version}"


def _amd_instr_shape(name: str, value: str, context: _Context) -> str:
    shape = _ints(value)
    if not shape:
        return _generic_field(name, value, context)
    if len(shape) >= 3:
        return f"one instruction computes an M×N = {shape[0]}×{shape[1]} tile with K = {shape[2]}"
    if len(shape) == 2:
        return f"one instruction computes an M×N = {shape[0]}×{shape[1]} tile"
    return f"instruction shape {_shape(shape)}"


def _amd_transposed(name: str, value: str, context: _Context) -> str:
    if _value(value) is True:
        return (
            "true: the result is computed transposed, so each thread holds consecutive elements"
            " along dim 1 (N), which allows wider stores"
        )
    return "false: each thread's consecutive result elements run along dim 0 (M)"


def _amd_warps(name: str, value: str, context: _Context) -> str:
    counts = _ints(value)
    if not counts:
        return _generic_field(name, value, context)
    total = math.prod(counts)
    return (
        f"the CTA's {_plural(total, 'warp')} (wavefronts) are arranged {_shape(counts)}"
        f" ({_dims_text(counts)})"
    )


def _cta_layout(name: str, value: str, context: _Context) -> str:
    parsed = _value(value)
    if isinstance(parsed, dict):
        parts = []
        for key, bases in parsed.items():
            if isinstance(bases, list) and all(isinstance(base, list) for base in bases):
                parts.append(_bases_text(key, bases))
        if parts:
            return "; ".join(parts)
    return f"how warps and CTAs are placed: {value}"


def _slice_dim(name: str, value: str, context: _Context) -> str:
    return (
        f"dim {value} of the parent layout is removed (the tensor is the parent's, reduced along dim {value})"
    )


def _parent(name: str, value: str, context: _Context) -> str:
    return f"the layout this one derives from: {_parent_text(value, context)}"


def _dot_parent(name: str, value: str, context: _Context) -> str:
    return (
        f"the layout of the dot's result, which fixes this operand's layout: {_parent_text(value, context)}"
    )


def _op_idx(name: str, value: str, context: _Context) -> str:
    index = _value(value)
    if index == 0:
        return "0 = A operand (left-hand side, M×K)"
    if index == 1:
        return "1 = B operand (right-hand side, K×N)"
    return f"operand index {value}"


def _k_width(name: str, value: str, context: _Context) -> str:
    width = _value(value)
    if isinstance(width, int):
        return f"each thread holds {_plural(width, 'consecutive element')} along K"
    return _generic_field(name, value, context)


def _linear_field(name: str, value: str, context: _Context) -> str:
    bases = _bases(value)
    if bases is None:
        return _generic_field(name, value, context)
    return _bases_text(name, bases)


def _vec(name: str, value: str, context: _Context) -> str:
    count = _value(value)
    if count == 1:
        return "1 element per vector: the swizzle moves single elements"
    return f"{count} elements form a contiguous vector that the swizzle never splits"


def _per_phase(name: str, value: str, context: _Context) -> str:
    count = _value(value)
    return f"{_plural(count, 'row')} {_verb(count, 'shares', 'share')} each swizzle phase"


def _max_phase(name: str, value: str, context: _Context) -> str:
    phases = _value(value)
    if phases == 1:
        return "1 phase: no swizzling"
    return f"{phases} different swizzle phases (XOR patterns) before the pattern repeats"


def _shared_order(name: str, value: str, context: _Context) -> str:
    return _order(name, value, context) + " in shared memory"


def _leading_offset(name: str, value: str, context: _Context) -> str:
    if _value(value) is True:
        return "true: an MMAv3 (wgmma/TMA) layout addressed with a leading offset"
    return "false: a classic swizzled layout"


def _swizzle_bytes(name: str, value: str, context: _Context) -> str:
    width = _value(value)
    if width == 0:
        return "0: no swizzling"
    return f"{width}-byte swizzle (the TMA/wgmma {width}B swizzle mode)"


def _transposed(name: str, value: str, context: _Context) -> str:
    if _value(value) is True:
        return "true: dim 0 is contiguous in shared memory (column-major)"
    return "false: the last dim is contiguous in shared memory (row-major)"


def _element_bits(name: str, value: str, context: _Context) -> str:
    bits = _value(value)
    width = context.int("swizzlingByteWidth")
    if isinstance(bits, int) and bits > 0 and width:
        return f"{bits}-bit elements, so one {width}-byte swizzle row holds {width * 8 // bits} elements"
    return f"{bits}-bit elements"


def _fp4_padded(name: str, value: str, context: _Context) -> str:
    if _value(value) is True:
        return "true: fp4 elements are padded (each 4-bit value takes a byte)"
    return "false: no fp4 padding"


def _intervals(name: str, value: str, context: _Context) -> str:
    pairs = re.findall(r"(\d+)\s*:\s*\+?(\d+)", value)
    if not pairs:
        return _generic_field(name, value, context)
    words = "; ".join(
        f"after every {interval} elements, {_plural(int(pad), 'padding element')} are inserted"
        for interval, pad in pairs
    )
    return words + " (to avoid shared-memory bank conflicts)"


def _padded_shape(name: str, value: str, context: _Context) -> str:
    shape = _ints(value)
    return f"the layout covers a {_shape(shape)} block" if shape else _generic_field(name, value, context)


def _block_m(name: str, value: str, context: _Context) -> str:
    return f"each block of tensor memory spans {value} rows (M)"


def _block_n(name: str, value: str, context: _Context) -> str:
    return f"each block of tensor memory spans {value} columns (N)"


def _col_stride(name: str, value: str, context: _Context) -> str:
    stride = _value(value)
    if stride == 1:
        return "1: packed, consecutive elements of a row sit in consecutive columns"
    return f"{stride}: consecutive elements of a row are {stride} columns apart (the gaps are unused)"


def _unpacked(name: str, value: str, context: _Context) -> str:
    if _value(value) is True:
        return "true: each element takes a whole 32-bit column (unpacked)"
    return "false: narrow elements are packed into 32-bit columns"


def _two_ctas(name: str, value: str, context: _Context) -> str:
    if _value(value) is True:
        return "true: laid out for two-CTA MMA (cta_group::2)"
    return "false: one CTA"


_COMMON_FIELDS: dict[str, Explain] = {
    "warpsPerCTA": _warps_per_cta,
    "order": _order,
    "CTAsPerCGA": _ctas_per_cga,
    "CTASplitNum": _cta_split,
    "CTAOrder": _cta_order,
    "CGALayout": _cga_layout,
    "register": _linear_field,
    "lane": _linear_field,
    "warp": _linear_field,
    "block": _linear_field,
    "offset": _linear_field,
    "instrShape": _amd_instr_shape,
    "parent": _parent,
}

_SWIZZLED_FIELDS: dict[str, Explain] = {
    "vec": _vec,
    "perPhase": _per_phase,
    "maxPhase": _max_phase,
    "order": _shared_order,
    "hasLeadingOffset": _leading_offset,
}

_FIELD_EXPLAINERS: dict[str, dict[str, Explain]] = {
    "blocked": {"sizePerThread": _size_per_thread, "threadsPerWarp": _threads_per_warp},
    "nvidia_mma": {
        "versionMajor": _mma_version,
        "versionMinor": _mma_minor,
        "instrShape": _mma_instr_shape,
    },
    "amd_mfma": {
        "version": _mfma_version,
        "versionMajor": _mfma_version,
        "versionMinor": _mma_minor,
        "warpsPerCTA": _amd_warps,
        "isTransposed": _amd_transposed,
    },
    "amd_wmma": {
        "version": _wmma_version,
        "warpsPerCTA": _amd_warps,
        "isTranspose": _amd_transposed,
        "isTransposed": _amd_transposed,
        "ctaLayout": _cta_layout,
    },
    "slice": {"dim": _slice_dim},
    "dot_op": {"opIdx": _op_idx, "parent": _dot_parent, "kWidth": _k_width},
    "swizzled_shared": _SWIZZLED_FIELDS,
    "shared": {
        **_SWIZZLED_FIELDS,
        "swizzlingByteWidth": _swizzle_bytes,
        "transposed": _transposed,
        "elementBitWidth": _element_bits,
    },
    "amd_rotating_shared": _SWIZZLED_FIELDS,
    "nvmma_shared": {
        "swizzlingByteWidth": _swizzle_bytes,
        "transposed": _transposed,
        "elementBitWidth": _element_bits,
        "fp4Padded": _fp4_padded,
    },
    "padded_shared": {"intervals": _intervals, "shape": _padded_shape, "order": _shared_order},
    "partitioned_shared": {
        "numPartitions": lambda name, value, context: (
            f"{value} separate shared-memory buffers (partitions), placed in different physical"
            " memory partitions to avoid conflicts"
        ),
        "numGroups": lambda name, value, context: f"{value} groups, each holding one piece per partition",
        "partitionDim": lambda name, value, context: f"the tensor is cut into pieces along dim {value}",
        "partitionLayout": lambda name, value, context: (
            f"the shared layout used inside each piece: {_parent_text(value, context)}"
        ),
    },
    "shared_linear": {
        "alignment": lambda name, value, context: f"the allocation is aligned to {value} bytes",
    },
    "tensor_memory_encoding": {
        "blockM": _block_m,
        "blockN": _block_n,
        "colStride": _col_stride,
        "unpacked": _unpacked,
        "twoCTAs": _two_ctas,
        "fp4Padded": _fp4_padded,
    },
}


# --- summaries ---------------------------------------------------------------------------

Summary = Callable[[str, _Context], str]


def _generic_summary(kind: str, context: _Context) -> str:
    names = ", ".join(context.params) or "no parameters"
    return f"{kind} encoding ({names})"


def _blocked_summary(kind: str, context: _Context) -> str:
    sizes = context.ints("sizePerThread")
    threads = context.ints("threadsPerWarp")
    warps = context.ints("warpsPerCTA")
    if not (sizes and threads and warps and len(sizes) == len(threads) == len(warps)):
        return _generic_summary(kind, context)
    tile = [s * t * w for s, t, w in zip(sizes, threads, warps, strict=True)]
    text = (
        f"blocked: {_plural(math.prod(warps), 'warp')} × {_plural(math.prod(threads), 'thread')}"
        f" cover {_tile(tile)} per repetition"
    )
    if len(sizes) > 1:
        text += f", {_plural(math.prod(sizes), 'element')} per thread ({_shape(sizes)})"
        text += f", dim {_fastest_dim(context, len(sizes))} fastest"
    return text


def _nvidia_mma_summary(kind: str, context: _Context) -> str:
    major = context.int("versionMajor")
    warps = context.ints("warpsPerCTA")
    shape = context.ints("instrShape")
    name = {1: "Volta mma", 2: "Ampere mma.sync", 3: "Hopper wgmma", 5: "Blackwell tcgen05"}.get(
        major or -1, f"MMA v{major}"
    )
    text = f"nvidia_mma: {name}"
    if warps:
        text += f", {_plural(math.prod(warps), 'warp')} arranged {_shape(warps)}"
    if shape:
        text += f", instruction tile {_shape(shape)}" + (" (M×N×K)" if len(shape) == 3 else " (M×N)")
        if warps and len(warps) >= 2 and len(shape) >= 2:
            text += f"; covers {warps[-2] * shape[0]}×{warps[-1] * shape[1]} per repetition"
    return text


def _amd_mma_summary(kind: str, context: _Context) -> str:
    version = context.int("version") or context.int("versionMajor")
    shape = context.ints("instrShape")
    warps = context.ints("warpsPerCTA")
    text = f"{kind}: version {version}" if version is not None else kind
    if warps:
        text += f", {_plural(math.prod(warps), 'warp')} arranged {_shape(warps)}"
    else:
        layout = _value(context.params.get("ctaLayout", ""))
        if isinstance(layout, dict) and isinstance(layout.get("warp"), list):
            text += f", {_plural(2 ** len(layout['warp']), 'warp')}"
    if shape:
        text += f", instruction tile {_shape(shape)}" + (" (M×N×K)" if len(shape) == 3 else "")
    transposed = context.flag("isTransposed")
    if transposed is None:
        transposed = context.flag("isTranspose")
    if transposed is not None:
        text += ", transposed" if transposed else ", not transposed"
    return text


def _slice_summary(kind: str, context: _Context) -> str:
    dim = context.params.get("dim", "?")
    parent = context.params.get("parent", "?")
    return f"slice: {parent} with dim {dim} removed"


def _dot_op_summary(kind: str, context: _Context) -> str:
    operand = {0: "A (left) operand", 1: "B (right) operand"}.get(context.int("opIdx"), "operand")
    text = f"dot_op: the {operand} of a dot whose result has layout {context.params.get('parent', '?')}"
    width = context.int("kWidth")
    if width:
        text += f", {width} consecutive K elements per thread"
    return text


def _linear_summary(kind: str, context: _Context) -> str:
    bases = {name: found for name, value in context.params.items() if (found := _bases(value)) is not None}
    parts = [f"{2 ** len(value)} {name}s" for name, value in bases.items() if value]
    text = f"{kind}: " + (" × ".join(parts) if parts else "no bases")
    tile = _linear_tile(bases)
    if tile:
        text += f" cover {_tile(tile)}"
    return text


def _swizzled_summary(kind: str, context: _Context) -> str:
    vec, per_phase, max_phase = context.int("vec"), context.int("perPhase"), context.int("maxPhase")
    order = context.ints("order")
    fastest = f", dim {order[0]} contiguous" if order else ""
    if max_phase == 1 or vec is None:
        return f"{kind}: unswizzled shared memory{fastest}"
    return (
        f"{kind}: shared memory XOR-swizzled in {vec}-element vectors, {max_phase} phases,"
        f" {_plural(per_phase or 1, 'row')} per phase{fastest}"
    )


def _nvmma_summary(kind: str, context: _Context) -> str:
    width = context.int("swizzlingByteWidth")
    bits = context.int("elementBitWidth")
    transposed = context.flag("transposed")
    text = f"{kind}: "
    text += f"{width}-byte swizzled" if width else "unswizzled"
    text += " shared memory for TMA and wgmma"
    if bits:
        text += f", {bits}-bit elements"
        if width:
            text += f" ({width * 8 // bits} per {width}-byte row)"
    if transposed is not None:
        text += ", column-major" if transposed else ", row-major"
    return text


def _padded_summary(kind: str, context: _Context) -> str:
    pairs = re.findall(r"(\d+)\s*:\s*\+?(\d+)", context.params.get("intervals", ""))
    shape = context.ints("shape")
    text = f"{kind}: shared memory with "
    text += ", ".join(f"{pad} padding elements every {interval}" for interval, pad in pairs) or "padding"
    if shape:
        text += f", for a {_shape(shape)} block"
    return text


def _tmem_summary(kind: str, context: _Context) -> str:
    block_m, block_n = context.int("blockM"), context.int("blockN")
    stride = context.int("colStride")
    text = "tensor memory"
    if block_m and block_n:
        text += f" in {block_m}×{block_n} blocks"
    if stride is not None:
        text += ", packed" if stride == 1 else f", column stride {stride}"
    return text


def _partitioned_summary(kind: str, context: _Context) -> str:
    partitions, groups = context.int("numPartitions"), context.int("numGroups")
    dim = context.params.get("partitionDim", "?")
    text = f"{kind}: the tensor is cut along dim {dim}"
    if partitions and groups:
        text += f" into {partitions * groups} pieces in {_plural(partitions, 'separate buffer')}"
    layout = context.params.get("partitionLayout")
    if layout:
        text += f", each piece laid out as {layout}"
    return text


def _fixed(sentence: str) -> Summary:
    return lambda kind, context: sentence


_SUMMARIES: dict[str, Summary] = {
    "blocked": _blocked_summary,
    "nvidia_mma": _nvidia_mma_summary,
    "amd_mfma": _amd_mma_summary,
    "amd_wmma": _amd_mma_summary,
    "slice": _slice_summary,
    "dot_op": _dot_op_summary,
    "linear": _linear_summary,
    "shared_linear": _linear_summary,
    "swizzled_shared": _swizzled_summary,
    "amd_rotating_shared": _swizzled_summary,
    "nvmma_shared": _nvmma_summary,
    "padded_shared": _padded_summary,
    "partitioned_shared": _partitioned_summary,
    "tensor_memory_encoding": _tmem_summary,
    "shared_memory": _fixed("the shared-memory address space (a memory space, not a layout)"),
    "tensor_memory": _fixed("Blackwell tensor memory (TMEM), a memory space, not a layout"),
    "tensor_memory_scales_encoding": _fixed("the special tensor-memory layout for MMA scale factors"),
    "coalesced_encoding": _fixed(
        "Gluon placeholder: gluon-infer-coalesced-encodings replaces it with a coalesced blocked layout"
    ),
    "auto_encoding": _fixed(
        "Gluon placeholder: gluon-resolve-auto-encodings infers the layout from the tensor's uses"
    ),
}


def _old_shared_summary(kind: str, context: _Context) -> str:
    if "swizzlingByteWidth" in context.params:
        return _nvmma_summary(kind, context)
    return _swizzled_summary(kind, context)


_SUMMARIES["shared"] = _old_shared_summary  # before the swizzled/nvmma split (3.1 to 3.2)
