"""Intra-line changes: the changed character spans of two paired lines, by a token diff."""

from __future__ import annotations

import re
from difflib import SequenceMatcher
from itertools import accumulate

from app.diff.align import _ALIGN_EFFORT, _intern, _opcodes, match_blocks
from app.diff.result import EQUAL

_DEFINES = re.compile(r"\s*(%[\w$.-]+)(?::\d+)? = ")
_INLINE_DIFFLIB_CELLS = 6400  # token pairs up to which difflib is quicker than match_blocks
_TOKEN = re.compile(r"%[\w$.-]+|[#!@^]?[\w$.]+|\s+|[^\w\s]")


def inline_changes(
    a: str,
    b: str,
    hide: tuple[list[tuple[int, int]], list[tuple[int, int]]] | None = None,
    renames: dict[str, str] | None = None,
    rename_definitions: bool = False,
) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """Changed character spans of two paired lines, by a token diff.

    `hide` lists spans (locations, when ignored) whose changes are not marked. With `renames`
    (numbering ignored), a name of A counts as equal to the name of B it was renamed to; with
    `rename_definitions` (SSA numbering ignored) so do the values two paired lines define. Lines too unlike to compare usefully get no marks
    at all: the whole row is already marked changed.
    """
    a_tokens, b_tokens = _TOKEN.findall(a), _TOKEN.findall(b)
    a_compared = a_tokens
    if renames is not None:
        defined = _DEFINES.match(a), _DEFINES.match(b)
        local = dict(renames)
        if rename_definitions and defined[0] and defined[1]:
            local[defined[0].group(1)] = defined[1].group(1)
        a_compared = [local.get(token, token) for token in a_tokens]
    a_ids, b_ids = _intern(a_compared, b_tokens)
    if len(a_ids) * len(b_ids) <= _INLINE_DIFFLIB_CELLS:
        matcher = SequenceMatcher(None, a_ids, b_ids, autojunk=False)
        blocks = [(m.a, m.b, m.size) for m in matcher.get_matching_blocks() if m.size]
    else:  # difflib goes quadratic on lines that repeat tokens (`f32, f32, ...`)
        blocks = match_blocks(a_ids, b_ids, _ALIGN_EFFORT)
    matched = sum(size for _, _, size in blocks)
    if 2 * matched < 0.35 * (len(a_tokens) + len(b_tokens)):
        return [], []
    a_offsets = _token_offsets(a_tokens)
    b_offsets = _token_offsets(b_tokens)
    a_spans: list[tuple[int, int]] = []
    b_spans: list[tuple[int, int]] = []
    for op, i0, i1, j0, j1 in _opcodes(blocks, len(a_ids), len(b_ids)):
        if op == EQUAL:
            continue
        if i1 > i0:
            _add_span(a_spans, a_offsets[i0], a_offsets[i1])
        if j1 > j0:
            _add_span(b_spans, b_offsets[j0], b_offsets[j1])
    if hide is not None:
        a_spans, b_spans = _without(a_spans, hide[0]), _without(b_spans, hide[1])
    return a_spans, b_spans


def _token_offsets(tokens: list[str]) -> list[int]:
    return [0, *accumulate(map(len, tokens))]


def _add_span(spans: list[tuple[int, int]], start: int, end: int) -> None:
    if spans and spans[-1][1] == start:
        spans[-1] = (spans[-1][0], end)
    else:
        spans.append((start, end))


def _without(spans: list[tuple[int, int]], hidden: list[tuple[int, int]]) -> list[tuple[int, int]]:
    if not hidden:
        return spans
    out = []
    for start, end in spans:
        pieces = [(start, end)]
        for h0, h1 in hidden:
            next_pieces = []
            for s, e in pieces:
                if e <= h0 or s >= h1:
                    next_pieces.append((s, e))
                    continue
                if s < h0:
                    next_pieces.append((s, h0))
                if e > h1:
                    next_pieces.append((h1, e))
            pieces = next_pieces
        out.extend(p for p in pieces if p[1] > p[0])
    return out
