"""What every location syntax resolves to, and the rules all of them share.

A location resolves to ``(frames, primary, name)``. ``frames`` is innermost first:
``callsite(callee at caller)`` gives ``[callee..., caller...]``, ``fused[a, b]`` gives ``a``'s
frames then ``b``'s. ``name`` is the first NameLoc name met walking the location the same way
(outermost name of a NameLoc chain). Line 0 means "no source line" (DWARF) and is dropped.

**Primary rule** (the frame shown in the gutter): the innermost frame whose file is not
library code; if every frame is library code, the outermost frame. Library code is
Triton's own Python package (a path containing ``/triton/language/``,
``/triton/experimental/``, ``/site-packages/triton/`` or ``/dist-packages/triton/``: e.g.
``standard.py``, ``core.py``, ``math.py``) and, in the same spirit, Inductor's runtime
helpers inlined into generated kernels (``/torch/_inductor/runtime/``). So a
``tl.cdiv`` call shows the kernel line that called it, not ``standard.py``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class SourceLoc:
    file: str  # path as recorded ("/home/dev/kernels/kernels.py")
    line: int
    col: int | None


@dataclass
class LineLocs:
    frames: list[SourceLoc]  # innermost first; empty if unknown
    primary: SourceLoc | None  # the frame to show in the gutter
    name: str | None  # NameLoc name if any ("x_ptr")


# (frames, primary, name): the resolved value of one location, shared between lines.
Resolved = tuple[tuple[SourceLoc, ...], SourceLoc | None, str | None]
UNKNOWN: Resolved = ((), None, None)

# Triton's, Inductor's runtime, and the tile DSLs' own packages (CuTe DSL's `cutlass` inside
# nvidia_cutlass_dsl, cuTile's `cuda/tile`, TileLang): their frames sit between an op and the kernel.
_LIBRARY_PATH = re.compile(
    r"/triton/language/|/triton/experimental/|/(?:site|dist)-packages/triton/|/torch/_inductor/runtime/"
    r"|/nvidia_cutlass_dsl/|/(?:site|dist)-packages/(?:cutlass|cuda/tile|tilelang)/"
)


def is_library_file(path: str) -> bool:
    """True for library files (Triton's, Inductor's runtime, the tile DSLs'), which the primary frame skips."""
    return _LIBRARY_PATH.search(path.replace("\\", "/")) is not None


def _primary(frames: tuple[SourceLoc, ...]) -> SourceLoc | None:
    for frame in frames:
        if not is_library_file(frame.file):
            return frame
    return frames[-1] if frames else None


def resolved(frames: tuple[SourceLoc, ...], name: str | None) -> Resolved:
    frames = tuple(frame for frame in frames if frame.line > 0)
    return (frames, _primary(frames), name)


def line_locs(value: Resolved) -> LineLocs:
    return LineLocs(list(value[0]), value[1], value[2])


# A new dump inside one text (a whole log): alias and metadata tables restart there.
_DUMP_HEADER = re.compile(r"//\s*-----//.*IR Dump|[;#]?\s*\*\*\* IR Dump")


def dump_segments(lines: list[str]) -> list[tuple[int, int]]:
    """(start, end) line ranges of the dumps in a text: one range for a single dump."""
    starts = [0]
    for index, line in enumerate(lines):
        if index and line[:1] in ("/", ";", "*", "#") and "IR Dump" in line and _DUMP_HEADER.match(line):
            starts.append(index)
    ends = starts[1:] + [len(lines)]
    return list(zip(starts, ends, strict=True))


# MLIR and LLVM print a string's unprintable bytes as \XX; other escapes stand for the character.
_HEX_ESCAPE = re.compile(r"\\([0-9A-Fa-f]{2})|\\(.)")


def unescape(body: str) -> str:
    if "\\" not in body:
        return body
    return _HEX_ESCAPE.sub(lambda m: chr(int(m.group(1), 16)) if m.group(1) else m.group(2), body)


def join_path(directory: str | None, filename: str) -> str:
    if not directory or filename.startswith("/") or re.match(r"[A-Za-z]:[\\/]", filename):
        return filename
    return directory.rstrip("/") + "/" + filename
