"""Pygments lexer for SASS as nvdisasm (``-c -gi``) and cuobjdump (``-sass``) print it.

* nvdisasm's line info ``//## File "/p/k.py", line 12 [inlined at ...]`` is ``Comment.Special``,
  like PTX's ``.loc``, so a renderer can recognise and hide it; other ``//`` comments and the
  ``/*0040*/`` address are ``Comment``;
* a guard predicate is ``Operator`` (``@``, ``@!``) then ``Name.Variable`` (``P0``, ``UP3``, ``PT``);
* the opcode is ``Keyword`` and each modifier after it (``.E``, ``.64x64x16.F32``) ``Keyword.Pseudo``;
* registers (``R12``, ``RZ``, ``UR4``, ``P1``, ``SR_TID.X``, ``B0``, ``SB0``) are ``Name.Variable``,
  and their ``.reuse``/``.64`` suffixes ``Name.Attribute``;
* labels (``.L_x_3``, ``add_kernel:``) are ``Name.Label``; directives (``.section``, ``.align``) at the
  start of a line ``Keyword.Reserved``; numbers ``Number``; strings and ``@"..."`` flags ``String``.

Every line is lexed from the root state, so pages of a text lex on their own. Nothing becomes
``Error``: an unknown character is ``Text``.
"""

from __future__ import annotations

from typing import ClassVar

from pygments.lexer import RegexLexer, bygroups
from pygments.token import Comment, Keyword, Name, Number, Operator, Punctuation, String, Text, Whitespace

__all__ = ["SassLexer"]

_REGISTER = r"(?:U?R(?:\d+|Z)|U?P(?:\d|T)|SR_[A-Za-z0-9_]+|SRZ|S?B\d+|URZ)(?![\w])"


class SassLexer(RegexLexer):
    name = "SASS"
    aliases: ClassVar[list[str]] = ["sass-nvidia"]
    filenames: ClassVar[list[str]] = ["*.sass"]

    tokens: ClassVar[dict] = {
        "root": [
            (r"\n", Whitespace),
            (r"[ \t]+", Whitespace),
            (r'//## File "(?:[^"\\\n]|\\.)*", line \d+[^\n]*', Comment.Special),
            (r"//[^\n]*", Comment.Single),
            (r"(/\*[0-9a-fA-F]+\*/)([ \t]*)", bygroups(Comment, Whitespace), "instruction"),
            (r"/\*[^\n]*?\*/", Comment.Multiline),
            (r"[.\w$]+:", Name.Label),
            (r"\.[A-Za-z_]\w*", Keyword.Reserved, "operands"),
            (r"\S", Text, "operands"),
        ],
        "instruction": [
            (r"\n", Whitespace, "#pop"),
            (r"[ \t]+", Whitespace),
            (r"\{", Punctuation),
            (r"(@!?)(" + _REGISTER + r")", bygroups(Operator, Name.Variable)),
            (r"([A-Z][A-Z0-9_]*)((?:\.[A-Za-z0-9_]+)*)", bygroups(Keyword, Keyword.Pseudo), "operands"),
            (r"[^\n]", Text, "operands"),
        ],
        "operands": [
            (r"\n", Whitespace, "#pop:2"),
            (r"[ \t]+", Whitespace),
            (r"/\*[^\n]*?\*/", Comment.Multiline),
            (r"//[^\n]*", Comment.Single),
            (r"(" + _REGISTER + r")((?:\.[A-Za-z0-9_]+)*)", bygroups(Name.Variable, Name.Attribute)),
            (r'@?"(?:[^"\\\n]|\\.)*"', String),
            (r"\.L_\w+", Name.Label),
            (r"\.[A-Za-z_][\w.$]*", Name.Namespace),  # section names: .text.add_kernel, .nv.info
            (r"@[A-Za-z_]\w*", Name.Attribute),  # symbol types and section flags: @function, @progbits
            (r"-?0x[0-9a-fA-F]+", Number.Hex),
            (r"-?\d+\.\d*(?:e[+-]?\d+)?|-?INF|\+INF|QNAN", Number.Float),
            (r"-?\d+", Number.Integer),
            (r"[A-Za-z_$][\w$.]*", Name),
            (r"[\[\](){},;|!~+\-*`]", Punctuation),  # `(.L_x_0): a branch target; {5,4}: scoreboards
            (r"[^\n]", Text),
        ],
    }

