"""The Pygments lexer for each kind of file or snapshot: :func:`lexer_for` (re-exported by
:mod:`app.highlight`, which loads this module on first use)."""

from __future__ import annotations

from functools import cache

from pygments.lexer import Lexer
from pygments.lexers.data import JsonLexer
from pygments.lexers.python import PythonLexer
from pygments.lexers.special import TextLexer

from app.highlight._fastlex import FastRegexLexer
from app.highlight.asm_lexers import AmdgcnLexer, TritonLlvmLexer
from app.highlight.mlir_lexer import MLIRLexer
from app.highlight.ptx_lexer import PTXLexer
from app.highlight.sass_lexer import SassLexer

__all__ = ["KINDS", "PythonSourceLexer", "lexer_for"]


class PythonSourceLexer(FastRegexLexer, PythonLexer):
    """Pygments' Python lexer on the combined-regex loop, for the source pane: the same tokens,
    1.3-1.6x faster (a snapshot page's first visit lexes its whole Python file)."""

# kind → lexer class; a kind is a file extension without the dot or a snapshot's stage
_LEXERS: dict[str, type[Lexer]] = {
    "mlir": MLIRLexer,
    "ttir": MLIRLexer,
    "ttgir": MLIRLexer,
    "source": MLIRLexer,
    "glir": MLIRLexer,
    "llvm-dialect": MLIRLexer,
    "llir": TritonLlvmLexer,
    "llvm": TritonLlvmLexer,
    "llvm-ir": TritonLlvmLexer,
    "ptx": PTXLexer,
    "amdgcn": AmdgcnLexer,
    "sass": SassLexer,
    "json": JsonLexer,
    "python": PythonSourceLexer,
    "py": PythonSourceLexer,
    "text": TextLexer,
}
KINDS: frozenset[str] = frozenset(_LEXERS)


def lexer_for(kind: str) -> Lexer:
    """The lexer for ``kind`` ("ttgir", ".ptx", "LLIR"...), one shared instance per kind.

    Unknown kinds get the plain-text lexer. The instances keep leading and trailing newlines
    (``stripnl=False``), so token lines match the text's lines. Lexers hold no state between
    calls, so sharing them across threads is safe.
    """
    kind = kind.strip().lower().lstrip(".")
    return _lexer(kind if kind in _LEXERS else "text")


@cache
def _lexer(kind: str) -> Lexer:
    return _LEXERS[kind](stripnl=False)
