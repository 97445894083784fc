"""PTX and AMDGCN locations (``ptx``, ``amdgcn``): ``.loc`` and ``.file`` directives.

PTX: ``.loc F L C`` sets the location for the following instructions until the next
``.loc`` (or the end of the function); ``.file F "/path/k.py"`` (with optional
timestamp/size, or ``"dir" "name"``) names the file. The
``.loc F L C, function_name $L__info_stringN, inlined_at F2 L2 C2`` form adds the
caller frame, and the caller's own ``inlined_at`` (from the latest ``.loc`` at that
position) is followed for deeper inlining.

AMDGCN: like PTX, with ``.file F "/dir" "k.py" md5 0x...`` or ``.file F "/path/k.py"`` and
flags after the column (``prologue_end``, ``is_stmt 0``). The inlining chain is only
in the comment (``; standard.py:43:13 @[ kernels.py:75:17 ]``); its base names are
mapped back to the full ``.file`` paths.

The ``.loc`` line itself carries the location it sets, so a highlighted block includes its
header.
"""

from __future__ import annotations

import re

from parsers.locations.frames import (
    UNKNOWN,
    LineLocs,
    Resolved,
    SourceLoc,
    join_path,
    line_locs,
    resolved,
    unescape,
)
from parsers.locations.llvm import comment_frames

_FILE_DIRECTIVE = re.compile(
    r'\s*\.file\s+(\d+)\s+"((?:[^"\\]|\\.)*)"(?:\s*,\s*\d+\s*,\s*\d+)?(?:\s+"((?:[^"\\]|\\.)*)")?'
)
_LOC_DIRECTIVE = re.compile(r"\s*\.loc\s+(\d+)\s+(\d+)(?:\s+(\d+))?(.*)$")
_INLINED_AT = re.compile(r"inlined_at\s+(\d+)\s+(\d+)\s+(\d+)")
_PTX_FUNCTION_START = re.compile(r"\s*(?:\.visible\s+|\.extern\s+|\.weak\s+)*\.(?:entry|func)\b")
_AMDGCN_RESET = (".Lfunc_end", ".section", ".amdgpu_metadata", ".end_amdgpu_metadata", ".size", ".end_amdhsa")


def _asm_files(lines: list[str]) -> dict[str, str]:
    files: dict[str, str] = {}
    for line in lines:
        if ".file" in line:
            match = _FILE_DIRECTIVE.match(line)
            if match is not None:
                first, second = unescape(match.group(2)), match.group(3)
                files[match.group(1)] = join_path(first, unescape(second)) if second is not None else first
    return files


def resolve_asm(lines: list[str], kind: str) -> list[LineLocs]:
    files = _asm_files(lines)
    by_basename: dict[str, str] = {}
    for path in files.values():
        by_basename.setdefault(path.rsplit("/", 1)[-1], path)

    comment_marker = "//" if kind == "ptx" else ";"
    # (file, line, col) -> the caller chain of the latest .loc at that position (PTX inlined_at).
    callers_of: dict[tuple[str, int, int], tuple[SourceLoc, ...]] = {}
    current: Resolved | None = None
    cache: dict[str, Resolved] = {}
    result: list[LineLocs] = []
    for line in lines:
        stripped = line.strip()
        if not stripped or stripped.startswith(comment_marker):
            result.append(LineLocs([], None, None))
            continue
        first = stripped[0]
        if first == ".":
            if stripped.startswith(".loc") and (len(stripped) == 4 or stripped[4] in " \t"):
                current = cache.get(stripped)
                if current is None:
                    current = _asm_loc(stripped, files, by_basename, callers_of, comment_marker)
                    if not current[0] or "inlined_at" not in stripped:
                        cache[stripped] = current
                result.append(line_locs(current))
                continue
            if kind == "ptx":
                if _PTX_FUNCTION_START.match(stripped):
                    current = None
            elif stripped.startswith(_AMDGCN_RESET):
                current = None
            result.append(LineLocs([], None, None))
            continue
        if kind == "ptx" and line.startswith("}"):
            current = None
        if stripped.endswith(":") or (kind == "amdgcn" and ":" in stripped.split(";", 1)[0].split()[0]):
            if kind == "amdgcn" and not stripped.startswith("."):
                current = None  # a function symbol, or the metadata YAML after the code
            result.append(LineLocs([], None, None))
            continue
        if current is not None and (first.isalpha() or first in "@_"):
            result.append(line_locs(current))
        else:
            result.append(LineLocs([], None, None))
    return result


def _asm_loc(
    stripped: str,
    files: dict[str, str],
    by_basename: dict[str, str],
    callers_of: dict[tuple[str, int, int], tuple[SourceLoc, ...]],
    comment_marker: str,
) -> Resolved:
    match = _LOC_DIRECTIVE.match(stripped)
    if match is None:
        return UNKNOWN
    file_number, line_text, col_text, rest = match.groups()
    line = int(line_text)
    col = int(col_text) if col_text else 0
    if line == 0:
        return UNKNOWN
    file = files.get(file_number, file_number)
    frame = SourceLoc(file, line, col or None)
    comment_at = rest.find(comment_marker)
    directive = rest if comment_at < 0 else rest[:comment_at]
    comment = "" if comment_at < 0 else rest[comment_at + len(comment_marker) :]
    callers: tuple[SourceLoc, ...] = ()
    inlined = _INLINED_AT.search(directive)
    if inlined is not None:
        caller_file = files.get(inlined.group(1), inlined.group(1))
        caller_key = (caller_file, int(inlined.group(2)), int(inlined.group(3)))
        caller = SourceLoc(caller_file, caller_key[1], caller_key[2] or None)
        callers = (caller, *callers_of.get(caller_key, ()))
        callers_of[(file, line, col)] = callers
    elif "@[" in comment:
        # AMDGCN prints the inlining chain only in its comment: "k.py:13:19 @[ caller.py:30:5 ]".
        callers = comment_frames(comment[comment.find("@[") :], by_basename)
    return resolved((frame, *callers), None)
