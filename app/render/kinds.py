"""What kind of text a blob holds, as the renderer sees it: its lexer, its location syntax, and
whether it needs another text's debug metadata."""

from __future__ import annotations

from parsers.locations.loc import KINDS as LOC_KINDS

# Lexers that return to their root state at every newline, so a page of lines lexes on its own
# (tests/test_highlight.py checks MLIR's; page-by-page renders of every corpus text of these kinds
# equal whole-text ones). The AMDGCN lexer is not: its texts are lexed whole, then cut into pages.
LINE_LOCAL_KINDS = frozenset({"mlir", "llvm", "ptx", "sass", "json", "text"})

_MLIR_KINDS = frozenset({"mlir", "ttir", "ttgir", "glir", "source"})


def snapshot_kind(kind: str) -> str:
    """The render kind of a snapshot: its ``kind`` column is "mlir", "internal", "llvm", or "tvmscript"
    (TileLang's per-pass TVMScript, highlighted as the Python it is written in)."""
    if kind == "tvmscript":
        return "python"
    return "llvm" if kind == "llvm" else "mlir"


def artifact_kind(kind: str) -> str:
    """The render kind of a cache file, from its ``kind`` column ("ttgir", "ptx", "json"...)."""
    if kind in _MLIR_KINDS:
        return "mlir"
    if kind in ("llir", "ptx", "amdgcn", "sass", "json", "python"):
        return kind
    if kind == "grp":
        return "json"
    return "text"


def loc_kind_of(kind: str) -> str | None:
    kind = "llvm" if kind == "llir" else kind
    return kind if kind in LOC_KINDS else None


def needs_debug_info(text: str) -> bool:
    """An LLVM IR text that references ``!dbg`` metadata it does not define."""
    return "!dbg !" in text and "!DILocation(" not in text


def has_debug_info(text: str) -> bool:
    return "!DILocation(" in text


def has_locations(text: str) -> bool:
    """An MLIR text with `loc(...)` locations."""
    return "loc(" in text


def lacks_locations(text: str) -> bool:
    """An MLIR text printed without locations (its ops may borrow an earlier text's)."""
    return bool(text.strip()) and "loc(" not in text
