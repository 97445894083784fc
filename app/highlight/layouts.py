"""Layout encodings in TTGIR (and CuTe DSL's layout types, app/highlight/cute_layouts.py), explained in plain words.

``find_layouts(text)`` collects the encoding alias definitions at the top (and bottom) of a
TTGIR module: ``#blocked1 = #ttg.blocked<{...}>``, ``#mma``, ``#shared``, ``#linear``,
``#smem``, ``#tmem``, and the old ``#triton_gpu.*`` spellings. ``explain_encoding(text)``
explains one encoding as printed, aliased or inline (``#ttg.slice<...>``, ``#ttg.dot_op<...>``,
``#ttng.tensor_memory_encoding<...>``, ``#gluon.coalesced_encoding``...).

Each field gets an explanation with the actual numbers, e.g. ``sizePerThread = [1, 8]`` →
"each thread holds 8 consecutive elements along dim 1 (1 along dim 0)", and each layout a
one-sentence summary. Unknown kinds and fields get a generic explanation; nothing here
raises on odd input.

This module finds and reads encodings in a text and puts an explanation together; the parts live
beside it: :mod:`~app.highlight.layout_params` reads the printed parameters,
:mod:`~app.highlight.layout_fields` explains each field, :mod:`~app.highlight.layout_summaries`
sums up each kind (both with the phrases of :mod:`~app.highlight.layout_words`), and
:mod:`~app.highlight.layout_model` holds the result types.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from app.highlight.cute_layouts import explain_type, is_cute_type
from app.highlight.layout_fields import COMMON_FIELDS, FIELD_EXPLAINERS, generic_field
from app.highlight.layout_model import Layout, LayoutField
from app.highlight.layout_params import Context, matching_close, parse_params
from app.highlight.layout_summaries import SUMMARIES, generic_summary

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
_ATTRIBUTE_NAME = re.compile(r"[#!][\w$.-]+")
# CuTe DSL's type aliases of layouts and tensors: `!memref_gmem_f32 = !cute.memref<f32, gmem, "4:1">`
_CUTE_ALIAS = re.compile(r"^!([\w$.-]+)[ \t]*=[ \t]*(!cute(?:_nvgpu)?\.[^\n]*?)[ \t]*$", re.MULTILINE)
# what an explainer may raise on a value it did not expect
_ODD_VALUE = (ValueError, TypeError, KeyError, IndexError, AttributeError, ZeroDivisionError, OverflowError)


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
    if "!cute" in text:
        for match in _CUTE_ALIAS.finditer(text):
            layout = explain_type(match.group(2))
            layout.alias = match.group(1)
            layout.line = text.count("\n", 0, match.start()) + 1
            layouts.setdefault(match.group(1), layout)
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
    close = matching_close(text, end)
    return text[start : close + 1] if close is not None else text[start:].rstrip()


def explain_encoding(definition: str, aliases: Mapping[str, Layout] | None = None) -> Layout:
    """Explain one encoding as printed (``#ttg.blocked<{...}>``, ``#ttg.slice<...>``, ...).

    ``aliases`` (from :func:`find_layouts`) lets a slice or dot_op name what its parent is.
    """
    definition = definition.strip()
    if is_cute_type(definition):
        return explain_type(definition)
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
        close = matching_close(body, 0)
        inner = body[1:close] if close is not None else body[1:].rstrip(">")
        params = parse_params(inner)
    layout = Layout(alias=None, kind=kind, definition=definition, line=None, dialect=dialect)
    context = Context(aliases or {}, dict(params))
    explainers = FIELD_EXPLAINERS.get(kind, {})
    for name, value in params:
        explain = explainers.get(name) or COMMON_FIELDS.get(name) or generic_field
        try:
            text = explain(name, value, context)
        except _ODD_VALUE:  # odd values never break the page
            text = generic_field(name, value, context)
        layout.fields.append(LayoutField(name=name, value=value, explanation=text))
    try:
        layout.summary = SUMMARIES.get(kind, generic_summary)(kind, context)
    except _ODD_VALUE:
        layout.summary = generic_summary(kind, context)
    return layout
