"""Pygments lexer for PTX as Triton's NVPTX back end writes it.

Pygments' own ``PtxLexer`` turns predicates (``@%p1``, ``@!%p1``), ``::`` qualifiers
(``.shared::cta``, ``mbarrier.try_wait.parity.shared::cta.b64``) and many opcodes into
``Error`` tokens. This one knows them:

* an instruction's opcode (``ld``, ``mbarrier``) is ``Keyword``; each suffix after it is
  ``Keyword.Type`` for a data type (``.b32``, ``.f16x2``, ``.pred``) and ``Keyword.Pseudo``
  otherwise (``.global``, ``.v4``, ``.shared::cta``, ``.mbarrier::complete_tx::bytes``);
* a guard predicate is ``Operator`` (``@``, ``@!``) then ``Name.Variable`` (``%p1``);
* registers ``%r12``, ``%ctaid.x`` are ``Name.Variable``; labels ``$L__BB0_2`` ``Name.Label``;
  the kernel after ``.entry``/``.func`` is ``Name.Function``;
* directives (``.reg``, ``.param``, ``.visible``) are ``Keyword.Reserved``; state spaces and
  types outside instructions are ``Keyword.Pseudo`` and ``Keyword.Type``;
* the debug-location directives ``.loc 1 13 19[, function_name ..., inlined_at ...]`` and
  ``.file 1 "/path/k.py"`` are ``Comment.Special``, like ``loc(...)`` in the MLIR lexer, so a
  renderer can recognise and hide them; ``//`` and ``/* */`` comments are ``Comment``;
* ``0f3F800000`` / ``0d...`` float immediates are ``Number.Float``.

Unknown characters become ``Text`` (``Error`` in :class:`StrictPTXLexer`, used by the tests).

Registration note for the lead: add the entry point
``ptx-triton = "app.highlight.ptx_lexer:PTXLexer"`` to ``[project.entry-points."pygments.lexers"]``
so that ``pygmentize -l ptx-triton`` works. The alias is ``ptx-triton`` (not ``ptx``) so it
does not shadow Pygments' built-in lexer for other users of the environment.
"""

from __future__ import annotations

from typing import ClassVar

from pygments.lexer import bygroups, default
from pygments.token import (
    Comment,
    Error,
    Keyword,
    Name,
    Number,
    Operator,
    Punctuation,
    String,
    Text,
    Whitespace,
    _TokenType,
)

from app.highlight._fastlex import FastRegexLexer

__all__ = ["PTXLexer", "StrictPTXLexer"]

_ID = r"[A-Za-z_$%][\w$]*"
# fundamental types, as suffixes or in declarations
_TYPE = (
    r"\.(?:[sub](?:8|16|32|64|128)|f(?:16|32|64)(?:x2)?|bf16(?:x2)?|tf32|e[45]m[23](?:x[24])?"
    r"|e2m1(?:x2)?|e[23]m[23](?:x2)?|ue8m0(?:x2)?|pred)(?![\w:])"
)
_STATE_SPACE = r"\.(?:reg|sreg|const|global|local|param|shared|tex)(?:::\w+)*(?![\w])"
_SUFFIX = r"\.\w+(?:::\w+)*"
_STRING = r'"(?:[^"\\\n]|\\.)*"'


def _tokens(fallback: _TokenType) -> dict:
    return {
        "root": [
            # label: `$L__BB0_2:` first on its line (before instructions)
            (r"^([ \t]*)([$\w][\w$]*)(:)", bygroups(Whitespace, Name.Label, Punctuation)),
            # guard predicate then instruction: `@%p1 ld.global...`, `@!%p2 bra ...`
            (
                r"(?:^|(?<=[;{]))([ \t]*)(@!?)(%[\w$]+)([ \t]+)([a-z][a-z0-9_]*)",
                bygroups(Whitespace, Operator, Name.Variable, Whitespace, Keyword),
                "opcode",
            ),
            # instruction first on its line or after `;` / `{`
            (
                r"(?:^|(?<=[;{]))([ \t]*)([a-z][a-z0-9_]*)(?=[.\s;]|$)",
                bygroups(Whitespace, Keyword),
                "opcode",
            ),
            (r"[ \t\r\f\v]+", Whitespace),
            (r"\n", Whitespace),
            (r"//[^\n]*", Comment.Single),
            (r"/\*[\s\S]*?\*/", Comment.Multiline),
            (r"%[\w$]+(?:\.[xyzw])?", Name.Variable),
            (r"[,;]", Punctuation),
            # debug locations (hideable, like MLIR's loc)
            (r"\.loc(?:[ \t]+[^\s/;][^\n/;]*?)?(?=[ \t]*(?://|;|$))", Comment.Special),
            (
                r"\.file[ \t]+\d+[ \t]+" + _STRING + r"(?:[ \t]*,[ \t]*\d+(?:[ \t]*,[ \t]*\d+)?)?",
                Comment.Special,
            ),
            (
                r"(\.(?:entry|func))([ \t]+)([A-Za-z_$][\w$]*)",
                bygroups(Keyword.Reserved, Whitespace, Name.Function),
            ),
            (_TYPE, Keyword.Type),
            (_STATE_SPACE, Keyword.Pseudo),
            (r"\.[A-Za-z_]\w*", Keyword.Reserved),
            (r"\$[\w$]+", Name.Label),
            (r"0[fF][0-9A-Fa-f]{8}|0[dD][0-9A-Fa-f]{16}", Number.Float),
            (r"0[xX][0-9A-Fa-f]+U?", Number.Hex),
            (r"-?\d+\.\d+(?:[eE][-+]?\d+)?", Number.Float),
            (r"-?\d+U?", Number.Integer),
            (r"[A-Za-z_][\w$]*", Name),
            (_STRING, String.Double),
            (r"[{}()\[\]<>:]", Punctuation),
            (r"[-+*/|!=&~^?@]", Operator),
            (r".", fallback),
        ],
        "opcode": [
            (_TYPE, Keyword.Type),
            (_SUFFIX, Keyword.Pseudo),
            default("#pop"),
        ],
    }


class PTXLexer(FastRegexLexer):
    """PTX from Triton (predicates, ``::`` qualifiers and opcode suffixes included)."""

    name = "PTX (Triton)"
    aliases: ClassVar[list[str]] = ["ptx-triton"]
    filenames: ClassVar[list[str]] = []  # Pygments' PtxLexer keeps *.ptx; lexer_for("ptx") returns this one
    mimetypes: ClassVar[list[str]] = []
    url = "https://docs.nvidia.com/cuda/parallel-thread-execution/"

    tokens = _tokens(Text)


class StrictPTXLexer(PTXLexer):
    """The same grammar with unknown characters as ``Error``: for tests that prove coverage."""

    name = "PTX (Triton, strict)"
    aliases: ClassVar[list[str]] = []

    tokens = _tokens(Error)
