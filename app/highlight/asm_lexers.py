"""Pygments' LLVM and GAS lexers, patched for what Triton writes.

Pygments' ``LlvmLexer`` handles most of a ``.llir`` but its keyword list lags LLVM: newer
keywords (``disjoint``, ``range``, ``nocreateundeforpoison``), debug-info constants
(``DW_LANG_C``, ``DISPFlagDefinition``) and ``|`` become ``Error`` tokens. ``GasLexer``
handles AMDGCN instructions but not the YAML ``.amdgpu_metadata`` block, nor ``<<``/``&`` in
``.amdhsa_*`` expressions. The subclasses here keep every Pygments rule and add the missing
ones after them, plus a final catch-all emitting ``Text`` (``Error`` in the strict variants
the tests use). In AMDGCN, ``.loc``/``.file`` become ``Comment.Special`` as in the MLIR and
PTX lexers. Both run on :class:`~app.highlight._fastlex.FastRegexLexer`'s loop.
"""

from __future__ import annotations

from typing import ClassVar

from pygments.lexer import inherit
from pygments.lexers.asm import GasLexer, LlvmLexer
from pygments.token import Comment, Error, Keyword, Name, Number, Operator, Punctuation, Text, _TokenType

from app.highlight._fastlex import FastRegexLexer

__all__ = ["AmdgcnLexer", "StrictAmdgcnLexer", "StrictTritonLlvmLexer", "TritonLlvmLexer"]


def _llvm_tokens(fallback: _TokenType) -> dict:
    return {
        "root": [
            inherit,
            (r"[-+]?(?:inf|nan)\b", Number.Float),
            (r"DW_\w+|DI(?:SP)?Flag\w+|CSK_\w+", Name.Constant),
            (r"[A-Za-z_][\w.]*", Keyword),  # keywords newer than Pygments' list
            (r"[|:#^]", Punctuation),
            (r".", fallback),
        ],
    }


def _amdgcn_tokens(fallback: _TokenType) -> dict:
    extra = [
        (r"<<|>>|[<>&|^~+/%=]", Operator),
        (r"\n", Text, "#pop"),
        (r".", fallback),
    ]
    return {
        "root": [
            (r"\.(?:loc|file)\b[^\n;]*?(?=[ \t]*(?:;|$))", Comment.Special),
            (r"^---$|^\.\.\.$", Comment.Preproc),  # YAML document markers in .amdgpu_metadata
            (r"^([ \t]*)(-)(?=[ \t])", Punctuation),  # YAML list items
            inherit,
            (r"-?(?:0[xX][0-9A-Fa-f]+|\d+(?:\.\d+)?)", Number),  # YAML values
            (r"[-<>&|^~+/%=*()\[\]{},:!]", Punctuation),
            (r".", fallback),
        ],
        "directive-args": [inherit, *extra],
        "instruction-args": [inherit, *extra],
    }


class TritonLlvmLexer(FastRegexLexer, LlvmLexer):
    """LLVM IR (``.llir`` and ``LLVM_IR_ENABLE_DUMP`` bodies), never an ``Error`` token."""

    name = "LLVM (Triton)"
    aliases: ClassVar[list[str]] = ["llvm-triton"]
    filenames: ClassVar[list[str]] = []
    mimetypes: ClassVar[list[str]] = []

    tokens = _llvm_tokens(Text)


# The strict variants derive from Pygments' classes, not from the lexers above: `inherit`
# would otherwise pull in the lenient catch-all ahead of the strict one.
class StrictTritonLlvmLexer(FastRegexLexer, LlvmLexer):
    name = "LLVM (Triton, strict)"
    aliases: ClassVar[list[str]] = []
    filenames: ClassVar[list[str]] = []
    mimetypes: ClassVar[list[str]] = []

    tokens = _llvm_tokens(Error)


class AmdgcnLexer(FastRegexLexer, GasLexer):
    """AMDGCN assembly (``.amdgcn``), including its ``.amdgpu_metadata`` block."""

    name = "AMDGCN (Triton)"
    aliases: ClassVar[list[str]] = ["amdgcn-triton"]
    filenames: ClassVar[list[str]] = []
    mimetypes: ClassVar[list[str]] = []

    tokens = _amdgcn_tokens(Text)


class StrictAmdgcnLexer(FastRegexLexer, GasLexer):
    name = "AMDGCN (Triton, strict)"
    aliases: ClassVar[list[str]] = []
    filenames: ClassVar[list[str]] = []
    mimetypes: ClassVar[list[str]] = []

    tokens = _amdgcn_tokens(Error)
