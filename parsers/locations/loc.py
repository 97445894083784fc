"""Map each line of an IR text back to the Python source lines it came from.

``resolve(text, kind)`` returns one :class:`LineLocs` per line of ``text.split("\\n")``.
The package is pure: no web, no database, no import of ``app``. This module is its entry:
the kinds, the dispatch, and what callers do with the result (index lines by source, match a
recorded path to an uploaded file). Each location syntax has its own module:

- ``parsers/locations/mlir.py``: ``loc(...)``, ``#locN`` alias tables, callsite/fused/name locs
- ``parsers/locations/llvm.py``: LLVM IR ``!dbg`` and ``!DILocation`` metadata, MIR's
  ``debug-location``, LLVM's location comments; per-node counts for large texts
- ``parsers/locations/ptx_amdgcn.py``: ``.loc`` / ``.file`` directives
- ``parsers/locations/sass_line_info.py``: nvdisasm's ``//## File ..., line N`` comments
- ``parsers/locations/frames.py``: what they all resolve to, and the primary-frame rule

A text holding several dumps (a whole log) is cut at each ``IR Dump`` header line
(``// -----// IR Dump ...``, ``; *** IR Dump ...``): alias and metadata tables belong to
their own dump (an LLVM dump without metadata borrows the latest earlier one's).

Lines without a location get empty ``frames``: braces, blank lines, labels, directives,
alias and metadata definitions (``#loc3 = loc(...)``, ``!12 = !DILocation(...)``: they
define locations, they are not ops).
"""

from __future__ import annotations

from collections.abc import Iterable

from parsers.locations.frames import LineLocs, SourceLoc, is_library_file
from parsers.locations.llvm import (
    LlvmLocations,
    llvm_by_node_applies,
    llvm_lines_by_node,
    llvm_node_counts,
    resolve_llvm,
)
from parsers.locations.mlir import resolve_mlir
from parsers.locations.ptx_amdgcn import resolve_asm
from parsers.locations.sass_line_info import resolve_sass

__all__ = [
    "KINDS",
    "LineLocs",
    "LlvmLocations",
    "SourceLoc",
    "is_library_file",
    "lines_by_source",
    "llvm_by_node_applies",
    "llvm_lines_by_node",
    "llvm_node_counts",
    "match_source",
    "resolve",
]


MLIR_KINDS = frozenset({"mlir", "ttir", "ttgir", "source", "glir"})
LLVM_KINDS = frozenset({"llir", "llvm"})
KINDS = MLIR_KINDS | LLVM_KINDS | {"ptx", "amdgcn", "sass"}


def resolve(text: str, kind: str) -> list[LineLocs]:
    """One :class:`LineLocs` per line of ``text.split("\\n")``; see the module docstring."""
    if kind not in KINDS:
        raise ValueError(f"unknown IR kind {kind!r}; expected one of {sorted(KINDS)}")
    lines = text.split("\n")
    if kind in MLIR_KINDS:
        return resolve_mlir(lines)
    if kind in LLVM_KINDS:
        return resolve_llvm(lines)
    if kind == "sass":
        return resolve_sass(lines)
    return resolve_asm(lines, kind)


def lines_by_source(locs: list[LineLocs]) -> dict[tuple[str, int], list[int]]:
    """``(file, line) -> [0-based IR line indexes]`` by primary frame, for "click a Python line"."""
    index: dict[tuple[str, int], list[int]] = {}
    for line_index, line_locs in enumerate(locs):
        primary = line_locs.primary
        if primary is not None:
            index.setdefault((primary.file, primary.line), []).append(line_index)
    return index


def _path_parts(path: str) -> list[str]:
    return [part for part in path.replace("\\", "/").split("/") if part not in ("", ".")]


def match_source(loc_file: str, candidates: Iterable[str]) -> str | None:
    """The candidate sharing the longest path suffix with ``loc_file`` (at least the file name).

    Recorded paths are absolute paths on the machine that compiled; uploaded sources have
    their own paths, so ``/home/dev/kernels/kernels.py`` matches ``sm90_mix/src/kernels.py``
    and ``/tmp/wl/x/inductor/kd/ckd....py`` matches ``src/inductor/kd/ckd....py``. Ties go
    to the candidate with fewer extra directories, then to the earlier candidate.
    """
    wanted = _path_parts(loc_file)
    if not wanted:
        return None
    best: str | None = None
    best_key: tuple[int, int] = (0, 0)
    for candidate in candidates:
        parts = _path_parts(candidate)
        common = 0
        for mine, theirs in zip(reversed(wanted), reversed(parts), strict=False):
            if mine != theirs:
                break
            common += 1
        if common == 0:
            continue
        key = (common, -(len(parts) - common))
        if best is None or key > best_key:
            best, best_key = candidate, key
    return best
