"""SASS locations (``sass``): the line info nvdisasm prints with ``-g`` / ``-gi``.

``//## File "/path/k.py", line 12`` sets the location of the instructions after it
(``/*0040*/ ...``) until the next such comment or section; ``inlined at "/path/k.py", line 30``
adds caller frames, innermost first. Without line info (cuobjdump, or a cubin built without it)
no line is located.
"""

from __future__ import annotations

import re

from parsers.locations.frames import UNKNOWN, LineLocs, Resolved, SourceLoc, line_locs, resolved, unescape

# nvdisasm -g / -gi line info: `//## File "/p/k.py", line 12` before the instructions it covers,
# with ` inlined at "/p/k.py", line 30` once per caller (innermost first) under -gi.
_SASS_LINE_INFO = re.compile(r'\s*//## File "((?:[^"\\]|\\.)*)", line (\d+)((?: inlined at "(?:[^"\\]|\\.)*", line \d+)*)')
_SASS_INLINED = re.compile(r' inlined at "((?:[^"\\]|\\.)*)", line (\d+)')


def resolve_sass(lines: list[str]) -> list[LineLocs]:
    """SASS from nvdisasm: a line-info comment sets the location of the instructions (`/*0040*/ ...`)
    after it, until the next one or the next section (a new function)."""
    current: Resolved | None = None
    cache: dict[str, Resolved] = {}
    result: list[LineLocs] = []
    none = LineLocs([], None, None)
    for line in lines:
        stripped = line.lstrip()
        if stripped.startswith("/*"):
            result.append(line_locs(current) if current is not None else none)
        elif stripped.startswith("//## File"):
            current = cache.get(stripped)
            if current is None:
                current = _sass_loc(stripped)
                cache[stripped] = current
            result.append(line_locs(current))
        else:
            if stripped.startswith((".section", "//----")):
                current = None
            result.append(none)
    return result


def _sass_loc(stripped: str) -> Resolved:
    match = _SASS_LINE_INFO.match(stripped)
    if match is None:
        return UNKNOWN
    frames = [SourceLoc(unescape(match.group(1)), int(match.group(2)), None)]
    for caller in _SASS_INLINED.finditer(match.group(3)):
        frames.append(SourceLoc(unescape(caller.group(1)), int(caller.group(2)), None))
    return resolved(tuple(frames), None)
