"""Alias definitions of one IR text -> the encodings the layout inspector can draw, aliases expanded
(``#ttg.slice<{dim = 0, parent = #blocked}>`` with ``#blocked`` written out)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from app.layouts.convert import DRAWN_KINDS
from app.layouts.errors import LayoutError
from app.layouts.parse import parse_encoding

_DEFINITION = re.compile(r"#([A-Za-z_][\w$-]*) = (#[A-Za-z_]\w*\.\w+.*)$")
_REF = re.compile(r"#([A-Za-z_][\w$-]*)(?![\w.$-])")


def expand(text: str, definitions: Mapping[str, str], depth: int = 0) -> str:
    if depth > 16:
        raise LayoutError("aliases nest too deeply (a cycle?)")

    def sub(m: re.Match) -> str:
        name = m.group(1)
        return expand(definitions[name], definitions, depth + 1) if name in definitions else m.group(0)

    return _REF.sub(sub, text)


def alias_definitions(lines: Iterable[str]) -> dict[str, str]:
    """``#name = #dialect.kind<...>`` lines of an IR text (they head each module)."""
    out = {}
    for line in lines:
        if line.startswith("#"):
            m = _DEFINITION.match(line.rstrip())
            if m:
                out[m.group(1)] = m.group(2)
    return out


def drawable(definitions: Mapping[str, str]) -> dict[str, str]:
    """alias -> expanded encoding text, for the aliases whose encoding this inspector draws."""
    out = {}
    for alias, text in definitions.items():
        try:
            full = expand(text, definitions)
            if parse_encoding(full).kind in DRAWN_KINDS:
                out[alias] = full
        except LayoutError:
            continue
    return out
