"""Where an IR text uses a layout alias in a type (`tensor<128x64xf16, #blocked>`,
`!ttg.memdesc<2x64x64xf16, #shared, ...>`): the shape and element type the inspector needs to draw
that alias as the IR uses it, and the bank width (dtype) an element type stands for."""

from __future__ import annotations

import re
from collections.abc import Iterable

from app.layouts.mapping import DTYPE_BITS

# A type's dims, element type (itself possibly `!tt.ptr<f16>`), then the alias; `\b` stops `#mma`
# from matching inside `#mma1`.
_USE = re.compile(r"(?:tensor|memdesc)<((?:\d+x)+)([^,<>]*(?:<[^<>]*>)?),\s*#([A-Za-z_][\w$-]*)(?![\w$-])")
_FLOAT8 = re.compile(r"^f8\w*$", re.IGNORECASE)


def dtype_of(elem: str) -> str:
    """The inspector's dtype for an IR element type: pointers are 64-bit, fp8 variants are f8, a
    type it does not know is "" (the caller's default)."""
    elem = elem.strip()
    if elem.startswith(("!tt.ptr", "!llvm.ptr")):
        return "i64"
    if elem in DTYPE_BITS:
        return elem
    if _FLOAT8.match(elem):
        return "f8"
    return ""


def first_uses(lines: Iterable[str], aliases: Iterable[str]) -> dict[str, dict]:
    """alias -> {"shape": [..], "elem": "f16"} of its first use in a type, for the aliases given."""
    wanted = set(aliases)
    found: dict[str, dict] = {}
    for line in lines:
        if "#" not in line or line.startswith("#"):
            continue
        for match in _USE.finditer(line):
            alias = match.group(3)
            if alias in wanted and alias not in found:
                found[alias] = {"shape": [int(d) for d in match.group(1)[:-1].split("x")],
                                "elem": match.group(2).strip()}
                if len(found) == len(wanted):
                    return found
    return found
