"""Pygments lexer for MLIR as Triton prints it: TTIR, TTGIR, Gluon IR and the LLVM dialect.

Registered as the ``pygments.lexers`` entry point ``mlir`` (see pyproject.toml), so
``pygmentize -l mlir file.ttgir`` works once the project is installed.

Token choices, which renderers may rely on:

* operation names (``tt.load``, ``ttg.convert_layout``, ``"tt.reduce"``) are ``Name.Function``;
  ``module`` and the few assembly keywords (``attributes``, ``iter_args``, ``to``...) are ``Keyword``;
* SSA values ``%x``, ``%acc_16:4``, ``%r#1`` are ``Name.Variable``; block labels ``^bb0`` ``Name.Label``;
* symbols ``@kernel`` / ``@"quoted"`` are ``Name.Entity``;
* attribute aliases ``#blocked1`` and type aliases ``!alias`` are ``Name.Decorator`` (uses and
  definitions alike, so a renderer can link one to the other); dialect attributes
  ``#ttg.blocked`` are ``Name.Builtin``; dialect types ``!tt.ptr``, builtin types ``tensor``,
  ``f16``, ``i32`` and shape prefixes ``128x64x`` are ``Keyword.Type``;
* attribute names in ``{name = value}`` are ``Name.Attribute``;
* every location, ``loc(...)`` after an op and whole ``#loc12 = loc(...)`` alias lines, is
  ``Comment.Special`` so it can be recognised and hidden; ``//`` comments are ``Comment.Single``.

The lexer is line-local: a newline always returns to the root state, so each line lexes the
same on its own as inside its module. Anything the grammar does not know becomes ``Text``
(``Error`` in :class:`StrictMLIRLexer`, which the tests use to prove coverage), never an
exception.
"""

from __future__ import annotations

from typing import ClassVar

from pygments.lexer import bygroups
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

__all__ = ["MLIRLexer", "StrictMLIRLexer"]

# Pieces shared by several rules.
_BARE_ID = r"[A-Za-z_][\w$]*"
_DOTTED_ID = r"[A-Za-z_][\w$]*(?:\.[\w$]+)+"
_STRING = r'"(?:[^"\\\n]|\\.)*"'
_SSA = r"%[\w$.-]+(?::\d+)?(?:#\d+)?"
_END = r"(?![\w$.])"  # a bare identifier ends here
_SCALAR = r"(?:[su]?i\d+|bf\d+|tf\d+|f\d+(?:E\d+M\d+\w*)?|index|ptr(?:<\d+>)?)"
# `f32, f32, f32, ...` and `ptr<1>, ptr<1>, ...` (LLVM structs of 128 members) are one token,
# for speed
_SCALAR_RUN = _SCALAR + r"(?:,[ \t]*" + _SCALAR + r"(?![\w$.<]))+" + _END
_BUILTIN_TYPE = (
    r"(?:[su]?i\d+|bf\d+|tf\d+|f\d+(?:E\d+M\d+\w*)?|index|none|ptr|tensor|vector|memref|tuple|complex)" + _END
)
_KEYWORD = (
    r"(?:attributes|iter_args|to|step|else|do|default|public|private|nested|external|internal"
    r"|num_warps|dense|dense_resource|array|sparse|affine_map|strided|distinct|mutable|has_side_effects"
    r"|asm_dialect|operand_attrs)" + _END
)
_CONSTANT = r"(?:true|false|unit)" + _END
# a loc(...) with up to three levels of parentheses, as one token (deeper ones use the
# "loc" state); possessive quantifiers keep a failed attempt linear
_LOC_BODY = r'(?:[^()"\n]++|' + _STRING + r")*+"
for _ in range(2):
    _LOC_BODY = r'(?:[^()"\n]++|' + _STRING + r"|\(" + _LOC_BODY + r"\))*+"
_LOC = r"loc\(" + _LOC_BODY + r"\)"


def _tokens(fallback: _TokenType) -> dict:
    """The state machine; ``fallback`` is what unknown characters become."""
    return {
        "root": [
            # rules roughly in order of frequency; order matters only where noted
            # an operation with no results, first on its line (before spaces and attribute names)
            (r"^([ \t]*)(module)" + _END, bygroups(Whitespace, Keyword.Namespace)),
            (r"^([ \t]*)(" + _DOTTED_ID + r")", bygroups(Whitespace, Name.Function)),
            (r"^([ \t]*)(" + _STRING + r")(?=\()", bygroups(Whitespace, Name.Function)),
            # an op of the enclosing op's default dialect, unprefixed, first on its line (`return`,
            # TileIR's `entry @f(`, `print "..."`): a bare name before a value, a symbol or nothing
            (r"^([ \t]*)(" + _BARE_ID + r")(?=[ \t]+[%@\"]|[ \t]*$)", bygroups(Whitespace, Name.Function)),
            (r"[ \t\r\f\v]+", Whitespace),
            (r"\n", Whitespace),
            (r"\{-#|#-\}", Comment.Preproc),  # before `{`
            # punctuation keeps the spaces after it: fewer tokens, same colours
            (r"[{}()\[\]<>,][ \t]*", Punctuation),
            (_LOC, Comment.Special),
            (r"loc\(", Comment.Special, "loc"),
            # `%x = op`, `%x:2 = "generic.op"`: the operation name after a result (before `%x`)
            (
                r"(" + _SSA + r")([ \t]*)(=)([ \t]*)(" + _DOTTED_ID + r"|" + _STRING + r")",
                bygroups(Name.Variable, Whitespace, Operator, Whitespace, Name.Function),
            ),
            (_SSA, Name.Variable),
            # `%a, %b = op`: the op after the last of several results; an unprefixed one too
            # (TileIR's `%tile, %token = load_view_tko ...`, `%0 = make_token`)
            (r"(=)([ \t]*)(" + _DOTTED_ID + r"|" + _BARE_ID + r")" + _END, bygroups(Operator, Whitespace, Name.Function)),
            (r"(?:->|::|:)[ \t]*", Punctuation),
            # attributes and types from dialects, and aliases of either
            (r"!" + _DOTTED_ID, Keyword.Type),
            (r"!" + _BARE_ID + r"(?=<)", Keyword.Type),
            (r"![\w$-]+", Name.Decorator),
            # whole `#loc12 = loc(...)` alias definitions: all Comment.Special (before `#x`)
            (r"^#loc[\w$.-]*[ \t]*=[ \t]*" + _LOC, Comment.Special),
            (
                r"^(#loc[\w$.-]*)([ \t]*)(=)([ \t]*)(loc)(\()",
                bygroups(*([Comment.Special] * 6)),
                "loc",
            ),
            (r"#" + _DOTTED_ID, Name.Builtin),
            (r"#" + _BARE_ID + r"(?=<)", Name.Builtin),
            (r"#[\w$-]+", Name.Decorator),
            # hex before shapes: `0xFF800000` is a number, `0xf32` a zero-sized shape
            (r"0x[0-9A-F]+" + _END, Number.Hex),
            # shapes: `128x64x` in `128x64xf16`, `?x4x`, `4x` in `vector<4x[4]xf32>` (before numbers)
            (r"(?:\d+|\?)(?:x(?:\d+|\?))*x(?=[A-Za-z!<\[])", Keyword.Type),
            (r"[-+]?\d+\.\d*(?:[eE][-+]?\d+)?", Number.Float),
            (r"[-+]?\d+", Number.Integer),
            # attribute names: `name = value`, `"quoted.name" = value` (before types, strings)
            (
                r"(" + _DOTTED_ID + r"|" + _BARE_ID + r"|" + _STRING + r")([ \t]*)(=)(?!=)",
                bygroups(Name.Attribute, Whitespace, Operator),
            ),
            (_SCALAR_RUN, Keyword.Type),
            (_BUILTIN_TYPE, Keyword.Type),
            (_KEYWORD, Keyword),
            (_CONSTANT, Keyword.Constant),
            (_DOTTED_ID, Name),
            (_BARE_ID, Name),
            (_STRING, String.Double),
            (r"\^[\w$.-]+", Name.Label),
            (r"@" + _STRING, Name.Entity),
            (r"@[\w$.-]+", Name.Entity),
            (r"//[^\n]*", Comment.Single),
            (r"[=*+\-?|]", Operator),
            (r".", fallback),
        ],
        # inside loc( ... ), balanced on parentheses; a newline always ends it
        "loc": [
            (r"[^()\"\n]+", Comment.Special),
            (_STRING, Comment.Special),
            (r"\(", Comment.Special, "#push"),
            (r"\)", Comment.Special, "#pop"),
            (r"\n", Whitespace, "#pop:1000"),
            (r'"', Comment.Special),
        ],
    }


class MLIRLexer(FastRegexLexer):
    """Triton's MLIR: TTIR, TTGIR, Gluon IR and the LLVM dialect; any other dialect's (CuTe DSL's
    `cute`, cuTile's `cuda_tile`, whose ops print without their prefix inside `cuda_tile.module`)."""

    name = "MLIR"
    aliases: ClassVar[list[str]] = ["mlir", "ttir", "ttgir"]
    filenames: ClassVar[list[str]] = ["*.mlir", "*.ttir", "*.ttgir", "*.source", "*.glir"]
    mimetypes: ClassVar[list[str]] = ["text/x-mlir"]
    url = "https://mlir.llvm.org/docs/LangRef/"

    tokens = _tokens(Text)


class StrictMLIRLexer(MLIRLexer):
    """The same grammar, but unknown characters are ``Error``: for tests that prove coverage."""

    name = "MLIR (strict)"
    aliases: ClassVar[list[str]] = []
    filenames: ClassVar[list[str]] = []
    mimetypes: ClassVar[list[str]] = []

    tokens = _tokens(Error)
