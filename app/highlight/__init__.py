"""Syntax highlighting and IR explanations: pure functions of IR text, no database or web code.
May import `parsers/` and `app.layouts` only.

* :func:`lexer_for` gives the (shared, cached) Pygments lexer for a kind of file or snapshot.
* :mod:`app.highlight.mlir_lexer`: TTIR, TTGIR, Gluon IR and the LLVM dialect.
* :mod:`app.highlight.ptx_lexer`: PTX, with predicates, ``::`` qualifiers and opcode suffixes.
* :mod:`app.highlight.sass_lexer`: SASS from nvdisasm or cuobjdump.
* :mod:`app.highlight.asm_lexers`: Pygments' LLVM IR and GAS lexers patched for Triton's output.
* :mod:`app.highlight.layouts`: layout encodings (``#blocked``, ``#mma``...) explained in words.
  Its parts are the ``layout_*`` modules beside it (parameters, fields, summaries, phrases).
* :mod:`app.highlight.hwops`: which lines use TMA, TDM, MMA, barriers, async copies...

Every lexer here marks locations (MLIR ``loc(...)``, PTX and AMDGCN ``.loc``/``.file``) as
``Comment.Special`` so a renderer can hide them, and none emits ``Error`` tokens on the corpus.

The lexers (:mod:`app.highlight.lexers`, on Pygments) are loaded on first use: the ingest and its op-index
helper import :mod:`app.highlight.hwops` from this package and lex nothing, and Pygments' import was
10-16 ms of their start.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pygments.lexer import Lexer

__all__ = ["KINDS", "PythonSourceLexer", "lexer_for"]


def lexer_for(kind: str) -> Lexer:
    """The lexer for ``kind`` ("ttgir", ".ptx", "LLIR"...), one shared instance per kind: see
    :func:`app.highlight.lexers.lexer_for`."""
    from app.highlight.lexers import lexer_for as shared_lexer

    return shared_lexer(kind)


def __getattr__(name: str) -> Any:
    if name in ("KINDS", "PythonSourceLexer"):
        from app.highlight import lexers

        return getattr(lexers, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
