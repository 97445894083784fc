"""Pairing inside changed blocks: deleted and inserted lines pair up by numbering-free text, then by
operation name, so a replaced op sits next to its new version; the result becomes segments.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Iterator

from app.diff.align import _PAIR_EFFORT, _intern, _opcodes, match_blocks
from app.diff.keys import _skeleton_lines
from app.diff.result import DELETE, EQUAL, INSERT, REPLACE, Segment

# The operation a line holds: `tt.load` in `%x = tt.load %p : ...`; the alias kind for `#a = #ttg.x<`.
# Leading blanks, then (for a line defining a value or alias) everything up to the first " = ", then
# a quoted or plain word; failing a word, the rest of the line. One match per line that stops after
# the word: no copies of long lines (LLVM struct types run to thousands of characters).
_OP_LINE = re.compile(r'\s*+(?:[%#].*? = )?+(?:("[^"]*"|[^\s(<{:,=]+)|(.*))')


def _op_names(lines: list[str]) -> list[str]:
    """Each line's operation name (see _OP_LINE); a name never is empty, the rest of a line may be."""
    return [match[1] or match[2] for match in map(_OP_LINE.match, lines)]


_PAIR_BY_OP_WINDOW = 250_000  # larger unmatched blocks are not paired by operation name


def _pair(
    a0: int, a1: int, b0: int, b1: int, a_text: list[str], b_text: list[str], skip_skeleton: bool
) -> Iterator[tuple[str, int, int, int, int]]:
    """Split a replaced block into paired lines and plain deletions/insertions.

    Lines pair when they are the same once value and alias numbering is dropped (a renumbered
    line sits next to its old self), then, among the rest, when they hold the same operation.
    """
    if skip_skeleton:
        yield from _pair_by_op(a0, a1, b0, b1, a_text, b_text)
        return
    a_ids, b_ids = _intern(_skeleton_lines(a_text[a0:a1]), _skeleton_lines(b_text[b0:b1]))
    for op, i0, i1, j0, j1 in _opcodes(match_blocks(a_ids, b_ids, _PAIR_EFFORT), len(a_ids), len(b_ids)):
        if op == EQUAL:
            yield REPLACE, a0 + i0, a0 + i1, b0 + j0, b0 + j1
        elif op == REPLACE:
            yield from _pair_by_op(a0 + i0, a0 + i1, b0 + j0, b0 + j1, a_text, b_text)
        else:
            yield op, a0 + i0, a0 + i1, b0 + j0, b0 + j1


def _pair_by_op(
    a0: int, a1: int, b0: int, b1: int, a_text: list[str], b_text: list[str]
) -> Iterator[tuple[str, int, int, int, int]]:
    if (a1 - a0) * (b1 - b0) > _PAIR_BY_OP_WINDOW:
        yield DELETE, a0, a1, b0, b0
        yield INSERT, a1, a1, b0, b1
        return
    a_ids, b_ids = _intern(_op_names(a_text[a0:a1]), _op_names(b_text[b0:b1]))
    for op, i0, i1, j0, j1 in _opcodes(match_blocks(a_ids, b_ids, _PAIR_EFFORT), len(a_ids), len(b_ids)):
        if op == EQUAL:
            yield REPLACE, a0 + i0, a0 + i1, b0 + j0, b0 + j1
        elif op == REPLACE:
            yield DELETE, a0 + i0, a0 + i1, b0 + j0, b0 + j0
            yield INSERT, a0 + i1, a0 + i1, b0 + j0, b0 + j1
        else:
            yield op, a0 + i0, a0 + i1, b0 + j0, b0 + j1


def _runs(flags: list[bool], start: int, end: int) -> Iterator[tuple[int, int, bool]]:
    """flags[start:end] cut where the flag changes: (start, stop, flag) per run, found by list.index (C)."""
    while start < end:
        value = flags[start]
        try:
            stop = flags.index(not value, start + 1, end)
        except ValueError:
            stop = end
        yield start, stop, value
        start = stop


def _segments(
    opcodes: list[tuple[str, int, int, int, int]],
    a_keys: list[int],
    b_keys: list[int],
    a_text: list[str],
    b_text: list[str],
    a_ignored: list[bool],
    b_ignored: list[bool],
    skip_skeleton: bool = False,
) -> list[Segment]:
    pieces: list[tuple[str, int, int, int, int]] = []
    for op, a0, a1, b0, b1 in opcodes:
        if op == REPLACE:
            pieces.extend(_pair(a0, a1, b0, b1, a_text, b_text, skip_skeleton))
        else:
            pieces.append((op, a0, a1, b0, b1))
    segments: list[Segment] = []

    def add(op: str, a0: int, a1: int, b0: int, b1: int, ignored: bool = False) -> None:
        if a1 == a0 and b1 == b0:
            return
        last = segments[-1] if segments else None
        if (
            last is not None
            and last.op == op
            and last.ignored == ignored
            and last.a_end == a0
            and last.b_end == b0
        ):
            segments[-1] = Segment(op, last.a_start, a1, last.b_start, b1, ignored)
        else:
            segments.append(Segment(op, a0, a1, b0, b1, ignored))

    for op, a0, a1, b0, b1 in pieces:
        if op == REPLACE:
            # a pair whose keys agree (two location lines, say) is not a change
            shift = b0 - a0
            same = list(map(operator.eq, a_keys[a0:a1], b_keys[b0:b1]))
            for start, stop, agree in _runs(same, 0, a1 - a0):
                add(EQUAL if agree else REPLACE, a0 + start, a0 + stop, a0 + start + shift, a0 + stop + shift)
        elif op == DELETE:
            for start, stop, ignored in _runs(a_ignored, a0, a1):
                add(DELETE, start, stop, b0, b0, ignored)
        elif op == INSERT:
            for start, stop, ignored in _runs(b_ignored, b0, b1):
                add(INSERT, a0, a0, start, stop, ignored)
        else:
            add(op, a0, a1, b0, b1)
    return segments
