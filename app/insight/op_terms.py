"""The terms of one IR text for the op index (app/insight/op_index.py): op names at the op position, their op
groups, layout attribute kinds. Kept apart from the index's database code so that the helper process
that scans texts during an ingest (app/insight/op_term_scan.py) imports only this and hwops.
"""

from __future__ import annotations

import re

from app.highlight.hwops import (
    descriptor_group,
    inline_asm_groups,
    inline_asm_groups_ascii,
    op_group,
    text_target,
)
from parsers.literal_scan import SpanScan

__all__ = ["FIRST_OP", "MAX_NAME", "OP", "blob_terms"]

MAX_NAME = 200  # longer op names (junk, not IR) are not indexed: op_terms.name holds 500 characters

# An op at the op position of a line: after optional results (`%a, %b:2 = `), maybe quoted (generic
# form). A name has a dot: `tt.load`, `scf.for`, `llvm.call_intrinsic`. The leading `\n` is a literal
# prefix, which lets the regex engine jump from line to line (3x faster than a MULTILINE `^`); the
# possessive quantifiers never backtrack, and MLIR's printer indents with spaces and writes ` = `.
OP_AT = rb' *+(?:%[^\n=]*+= )?+"?+([a-z_][\w$]*+\.[\w$.]*+)'
OP = re.compile(rb"\n" + OP_AT)
FIRST_OP = re.compile(OP_AT)
# llvm.call_intrinsic "llvm.x.y": the intrinsic decides its op group (TMA, MMA, barrier...).
_INTRINSIC = re.compile(rb'\n[ \t]*(?:%[^\n=]*=[ \t]*)?llvm\.call_intrinsic[ \t]+"(llvm\.[\w.]+)"')
# A layout attribute, defined as an alias or written inline: #ttg.blocked<...>, #ttg.nvidia_mma<...>.
_LAYOUT = re.compile(rb"#(?:ttg|triton_gpu|ttng|triton_nvidia_gpu|amdg|amdgpu|triton_amdgpu)\.(\w+)<")
# With hyperscan: the layout attributes' spans and whether "asm" occurs, in one pass (the `re` path
# is two: `in`, then a findall whose first byte, "#", starts every #loc). A layout span holds one "."
# and ends at "<", so no two overlap and the spans are findall's.
_ONE_PASS = SpanScan.create([_LAYOUT.pattern.replace(b"(\\w+)", b"\\w+"), b"asm"], [False, True])


def blob_terms(body: bytes) -> frozenset[str]:
    """Every term one IR text holds."""
    kinds = None
    if _ONE_PASS is not None:
        layouts, asm = _ONE_PASS.spans(body)
        has_asm = bool(asm)
        kinds = {body[body.index(b".", start) + 1 : end - 1] for start, end in layouts}
    else:
        has_asm = b"asm" in body
    names = set(OP.findall(body))
    first = FIRST_OP.match(body)
    if first is not None:
        names.add(first.group(1))
    ops = [op for op in (name.rstrip(b".").decode("ascii") for name in names) if "." in op and len(op) <= MAX_NAME]
    terms = {"op:" + name for name in ops}
    for name in ops:
        group = op_group(name)
        if group:
            terms.add("group:" + group)
    if "llvm.call_intrinsic" in ops:
        for intrinsic in set(_INTRINSIC.findall(b"\n" + body)):
            group = op_group('llvm.call_intrinsic "' + intrinsic.decode("ascii") + '"')
            if group:
                terms.add("group:" + group)
    if has_asm or "group:descriptor" in terms:  # as count_groups does: PTX in inline
        # assembly, descriptor ops by the module's own target. IR printers write ASCII: its
        # assembly strings are found in the bytes, and the text is decoded only if needed.
        ascii_text = body.isascii()
        text = None if ascii_text else body.decode("utf-8", "replace")
        if has_asm:
            asm_groups = inline_asm_groups_ascii(body) if ascii_text else inline_asm_groups(text)
            terms.update("group:" + group for group in asm_groups)
        if "group:descriptor" in terms:
            group = descriptor_group(text_target(text if text is not None else body.decode("ascii")))
            if group != "descriptor":
                terms.discard("group:descriptor")
                terms.add("group:" + group)
    if kinds is None:
        kinds = set(_LAYOUT.findall(body))
    terms.update("layout:" + kind.decode("ascii") for kind in kinds if len(kind) <= MAX_NAME)
    return frozenset(terms)
