"""Comparison keys: each line's compared text (locations stripped unless compared) and its alignment
key (value and alias numbering dropped when ignored); `#locN = loc(...)` alias lines share one key.
"""

from __future__ import annotations

import re
from itertools import repeat

from app.diff.result import DiffOptions

_LOC_CALL = "loc("
_STRING_OR_PAREN = re.compile(r'"(?:[^"\\\n]|\\.)*"|[()]')
_LOC_ALIAS_LINE = re.compile(r"#loc\d*\s*=\s*loc\(|#di_\w+\s*=\s*#llvm\.di_")
_LOC_LINE_KEY = "\x00loc"  # the one key every location alias line shares when locs are ignored
_SIMPLE_TRAILING_LOC = re.compile(r" loc\((?:#loc\d*|unknown)\)")
_TRAILING_LOCS = re.compile(_SIMPLE_TRAILING_LOC.pattern + "$", re.MULTILINE)  # one per line, at its end

_FUNC_LINE = re.compile(r"\s*(?:[\w.]+\.)?func\b")


def split_lines(text: str) -> list[str]:
    """A snapshot's lines: split on newlines only (IR may hold form feeds), no trailing empty line."""
    if not text:
        return []
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    if "\r" not in text:  # a C-speed scan spares a pass over every line
        return lines
    return [line.removesuffix("\r") for line in lines]


def _close_paren(line: str, open_at: int) -> int:
    """Index of the `)` closing the `(` at `open_at`, skipping strings; -1 if unbalanced."""
    depth = 0
    for match in _STRING_OR_PAREN.finditer(line, open_at):
        token = match.group()
        if token == "(":
            depth += 1
        elif token == ")":
            depth -= 1
            if depth == 0:
                return match.start()
    return -1


def loc_spans(line: str) -> list[tuple[int, int]]:
    """Character spans of every `loc(...)` in a line, with the whitespace before each."""
    spans: list[tuple[int, int]] = []
    start = line.find(_LOC_CALL)
    while start >= 0:
        before = line[start - 1] if start else " "
        if before.isalnum() or before in "_.#$%":
            start = line.find(_LOC_CALL, start + 1)
            continue
        close = _close_paren(line, start + 3)
        if close < 0:
            break
        lead = start
        while lead > 0 and line[lead - 1] in " \t":
            lead -= 1
        spans.append((lead, close + 1))
        start = line.find(_LOC_CALL, close + 1)
    return spans


def _strip_locs(line: str) -> str:
    if _LOC_CALL not in line:
        return line
    last = line.rfind(" loc(")
    if last >= 0 and _SIMPLE_TRAILING_LOC.fullmatch(line, last) and line.find(_LOC_CALL, 0, last) < 0:
        return line[:last].rstrip()
    spans = loc_spans(line)
    if not spans:
        return line
    parts, pos = [], 0
    for start, end in spans:
        parts.append(line[pos:start])
        pos = end
    parts.append(line[pos:])
    return "".join(parts)


def is_loc_line(line: str) -> bool:
    """A location alias definition (`#loc12 = loc(...)`) or a debug-info alias only locs use."""
    return line.startswith("#") and _LOC_ALIAS_LINE.match(line) is not None


# Names whose numbering the printers add: `%12`, `%arg3`, `%acc_13`, `%c1024_i32_3`, `^bb2`;
# `#blocked1`, `#loc12` (not `#ttg.blocked<...>`, a dialect attribute).
_SSA_NAME = re.compile(r"%[\w$.-]+|\^bb\d+")
_ALIAS_NAME = re.compile(r"#[A-Za-z_][\w$]*+(?![.<])")
_SSA_SPLIT = re.compile(r"(%[\w$.-]+)")  # one alternative only: alternations scan 4x slower
_BLOCK_NUMBER = re.compile(r"\^bb\d+")
_ALIAS_SPLIT = re.compile(r"(#[A-Za-z_][\w$]*+)(?![.<])")
_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')


def _skeleton(text: str, ssa: bool = True, alias: bool = True) -> str:
    """Text without value (`ssa`) and alias (`alias`) numbering, for aligning renumbered lines.

    Works on a whole text at once as well as on a line: names never span lines.
    """
    if ssa and ("%" in text or "^" in text):
        parts = _SSA_SPLIT.split(text)
        names = parts[1::2]
        stripped = list(map(str.rstrip, names, repeat("0123456789_")))
        if stripped != names:  # a copy of the text only when some name loses its number
            parts[1::2] = stripped
            text = "".join(parts)
        if "^bb" in text:
            text = _BLOCK_NUMBER.sub("^bb", text)
    if alias and "#" in text:
        parts = _ALIAS_SPLIT.split(text)
        names = parts[1::2]
        stripped = list(map(str.rstrip, names, repeat("0123456789")))
        if stripped != names:
            parts[1::2] = stripped
            text = "".join(parts)
    return text


def _skeleton_lines(lines: list[str], ssa: bool = True, alias: bool = True) -> list[str]:
    keys = _skeleton("\n".join(lines), ssa, alias).split("\n")
    return keys if len(keys) == len(lines) else [_skeleton(line, ssa, alias) for line in lines]


def _prepare(
    lines: list[str], options: DiffOptions, text: str | None = None
) -> tuple[list[str], list[str], list[bool]]:
    """(compared text, alignment key, is-ignored-line) for every line.

    `text`, when given, is what `lines` were split from (spares joining them again).
    """
    ignored = [False] * len(lines)
    if options.loc or not lines:
        compared = [line.rstrip() for line in lines]
    else:
        # The common line holds no `loc(` but a simple trailing one: one substitution over the
        # whole text drops those, and a C-level rstrip finishes them. A line that still holds
        # `loc(` or starts with `#` (alias definitions: `#loc3 = loc(#loc1)` loses its tail too)
        # goes through the line-by-line rules below, from its original text.
        if text is None or "\r" in text:
            text = "\n".join(lines)
        dropped = _TRAILING_LOCS.sub("", text).split("\n")  # never drops a newline
        if len(dropped) > len(lines):  # the text's final newline
            dropped.pop()
        compared = list(map(str.rstrip, dropped))
        special = [i for i, line in enumerate(dropped) if _LOC_CALL in line or line[:1] == "#"]
        for index in special:
            line = lines[index]
            if _LOC_CALL not in line:
                if line.startswith("#di_") and _LOC_ALIAS_LINE.match(line):
                    compared[index] = _LOC_LINE_KEY
                    ignored[index] = True
            elif line.startswith("#") and _LOC_ALIAS_LINE.match(line):
                compared[index] = _LOC_LINE_KEY
                ignored[index] = True
            else:
                compared[index] = _strip_locs(line).rstrip()
    keys = _skeleton_lines(compared, options.ssa, options.alias) if options.ssa or options.alias else compared
    return compared, keys, ignored
