"""Line diffs of IR snapshots. Pure functions of two texts and the options; no database, no web.
May import `parsers/`, `app.layouts` and `app.highlight` only.

The pipeline:

1. **Keys.** Each line gets a comparison key: by default its `loc(...)` parts are stripped and
   `#locN = loc(...)` alias lines (and the `#di_*` debug-info aliases they use) all share one key,
   so location churn neither splits nor pairs real lines. With `ssa` (`alias`) on, value names
   (alias names) lose their numbering in the key: `%acc_13` and `%acc_14` both become `%acc`.
2. **Alignment** of the key sequences with a histogram diff (git's algorithm): trim the common
   ends, split at the longest run around the rarest line the two sides share, recurse. It is
   linear-ish on real IR, where difflib's matcher goes quadratic on repetitive lines.
3. **Renumbering check.** Lines that align only because their numbering was ignored must rename
   consistently: a value (alias) of A maps to one name of B for the whole function (module).
   A line that breaks the mapping is a change. So a pure renumbering disappears while a changed
   operand (`%5` where the mapping says `%4`) still shows.
4. **Pairing.** Inside each changed block, deleted and inserted lines are paired by operation
   name (a second, coarser alignment), so a replaced `tt.load` sits next to its new version and
   gets an intra-line diff; the rest are plain deletions and insertions.

The result lists *segments* (runs of rows with one op) over a row space; hunks, change blocks and
stats are computed from them. Rows always point at the original lines: what is compared is
normalised, what is shown is not.
"""

from __future__ import annotations

import operator
import re
import threading
from bisect import bisect_left, bisect_right
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from itertools import accumulate, chain, count, repeat
from typing import NamedTuple

__all__ = [
    "DEFAULT_CONTEXT",
    "DiffCache",
    "DiffOptions",
    "DiffResult",
    "Hunk",
    "Row",
    "Segment",
    "apply_hunks",
    "diff_texts",
    "inline_changes",
    "loc_spans",
    "match_blocks",
    "split_lines",
]

DEFAULT_CONTEXT = 5
MAX_CONTEXT = 1000
EQUAL, DELETE, INSERT, REPLACE = "equal", "delete", "insert", "replace"

# ---------------------------------------------------------------------------------------------
# options


@dataclass(frozen=True)
class DiffOptions:
    """What the comparison ignores, and how much unchanged text surrounds each change."""

    loc: bool = False  # compare locations too (default: ignore loc(...) and #locN alias lines)
    ssa: bool = False  # ignore SSA value renumbering (%12/%13, %arg3, %cst_4, %offsets_9)
    alias: bool = False  # ignore alias renumbering (#blocked1/#blocked2, #loc12, #shared3)
    context: int = DEFAULT_CONTEXT  # unchanged lines around a change; -1 shows everything

    @property
    def compare_key(self) -> tuple[bool, bool, bool]:
        """The options that change the comparison (context only changes the grouping)."""
        return (self.loc, self.ssa, self.alias)

    def as_dict(self) -> dict:
        return {"loc": self.loc, "ssa": self.ssa, "alias": self.alias, "context": self.context}


# ---------------------------------------------------------------------------------------------
# normalisation

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


# ---------------------------------------------------------------------------------------------
# alignment: histogram diff

_MAX_CHAIN = 64  # a line occurring more often than this in A never splits a region (as in git)
# Bounds on histogram splitting (see match_blocks), in lines scanned per line of input: the
# alignment's is generous, pairing inside changed blocks is only a presentation nicety.
_ALIGN_EFFORT = 64
_PAIR_EFFORT = 16
_DIFFLIB_WINDOW = 40_000  # regions without a usable split, up to this many cells: difflib


def _intern(a: Sequence[str], b: Sequence[str]) -> tuple[list[int], list[int]]:
    """Each distinct key as a small int, numbered by first occurrence (in a, then b)."""
    ids = dict(zip(dict.fromkeys(chain(a, b)), count()))
    return list(map(ids.__getitem__, a)), list(map(ids.__getitem__, b))


# Lines occurring equally often on both sides, up to this many times, anchor in order when no line
# is unique. Up to _MAX_CHAIN: on the corpus's 1,738 distinct adjacent pairs, 64 (against 4) left
# every alignment as long, paired 2.4% more changed lines and took 17% less time in all, because a
# repetitive region (unrolled loop bodies) is anchored in one pass instead of split a run at a time.
_RARE = _MAX_CHAIN


def _unique_anchors(
    a: list[int], alo: int, ahi: int, b: list[int], blo: int, bhi: int
) -> list[tuple[int, int]]:
    """Anchors for a region: lines occurring once on each side, longest in-order subset (patience).

    With no such line, lines occurring equally often (up to _RARE times) on both sides pair
    their occurrences in order: a region of dead code between two kept blocks, or of unrolled
    loop bodies, still gets anchors in one pass, where splitting at one line at a time would be
    quadratic.
    """
    a_slice, b_slice = a[alo:ahi], b[blo:bhi]
    a_count = Counter(a_slice)
    b_count = Counter(b_slice)
    both = {key for key, count in b_count.items() if count == 1 and a_count.get(key) == 1}
    if both:
        a_where = {key: i for i, key in enumerate(a_slice, alo) if key in both}
        pairs = [(a_where[key], j) for j, key in enumerate(b_slice, blo) if key in both]
    else:
        pairs = []
    if not pairs and ahi - alo + bhi - blo > 64:
        rare = {key for key, count in a_count.items() if count <= _RARE and b_count.get(key) == count}
        if rare:
            a_seen: dict[int, list[int]] = {}
            for i in range(alo, ahi):
                if a[i] in rare:
                    a_seen.setdefault(a[i], []).append(i)
            taken: dict[int, int] = {}
            for j in range(blo, bhi):
                key = b[j]
                if key in rare:
                    k = taken.get(key, 0)
                    taken[key] = k + 1
                    pairs.append((a_seen[key][k], j))
    if not pairs:
        return []
    tails: list[int] = []  # smallest A position ending an increasing run of each length
    tail_at: list[int] = []
    back = [-1] * len(pairs)
    for index, (i, _j) in enumerate(pairs):
        k = bisect_left(tails, i)
        if k == len(tails):
            tails.append(i)
            tail_at.append(index)
        else:
            tails[k] = i
            tail_at[k] = index
        back[index] = tail_at[k - 1] if k else -1
    chain = []
    index = tail_at[-1]
    while index >= 0:
        chain.append(pairs[index])
        index = back[index]
    chain.reverse()
    return chain


def _positions(a: list[int]) -> dict[int, list[int]]:
    """Every key's positions in `a`, ascending: built once per alignment, narrowed per region."""
    where: dict[int, list[int]] = {}
    for i, key in enumerate(a):
        positions = where.get(key)
        if positions is None:
            where[key] = [i]
        else:
            positions.append(i)
    return where


def _best_split(
    a: list[int], alo: int, ahi: int, b: list[int], blo: int, bhi: int, where: dict[int, list[int]]
) -> tuple[int, int, int]:
    """The longest common run through the rarest shared line (git's histogram heuristic).

    `where` holds each key's positions in all of `a`; a region's occurrences are the slice
    between two bisections, so a split costs O(region of b x log n), not a rebuilt index of a.
    """
    best_i = best_j = best_size = 0
    best_count = _MAX_CHAIN + 1
    j = blo
    while j < bhi:
        everywhere = where.get(b[j])
        if everywhere is None:
            j += 1
            continue
        first = bisect_left(everywhere, alo)
        last = bisect_left(everywhere, ahi, first)
        count = last - first
        if count == 0 or count > best_count:
            j += 1
            continue
        next_j = j + 1
        for i in everywhere[first:last]:
            s_i, s_j = i, j  # extend the run both ways
            while s_i > alo and s_j > blo and a[s_i - 1] == b[s_j - 1]:
                s_i -= 1
                s_j -= 1
            e_i, e_j = i + 1, j + 1
            while e_i < ahi and e_j < bhi and a[e_i] == b[e_j]:
                e_i += 1
                e_j += 1
            if count < best_count or e_i - s_i > best_size:
                best_i, best_j, best_size, best_count = s_i, s_j, e_i - s_i, count
            if e_j > next_j:  # noqa: PLR1730 - a comparison is cheaper than max() in this loop
                next_j = e_j
        j = next_j
    return best_i, best_j, best_size


def match_blocks(a: list[int], b: list[int], effort: int | None = None) -> list[tuple[int, int, int]]:
    """Matching blocks (i, j, size) of two key sequences, in order.

    Each region: trim the common head and tail; anchor on the lines unique to both sides
    (patience); failing that, split at the rarest shared line (histogram); failing that, a
    small region goes to difflib and a large one stays a replacement.

    Histogram splits scan their region of `b`; when splits keep landing near a region's edge
    (repetitive lines) that is quadratic. `effort` bounds the lines scanned, as a multiple of
    len(a) + len(b): past it, no more histogram splits (anchors and difflib still apply).
    """
    budget = None if effort is None else effort * (len(a) + len(b))
    blocks: list[tuple[int, int, int]] = []
    where: dict[int, list[int]] | None = None  # built on the first region that needs a split
    stack = [(0, len(a), 0, len(b))]
    while stack:
        alo, ahi, blo, bhi = stack.pop()
        start_i, start_j = alo, blo
        while alo < ahi and blo < bhi and a[alo] == b[blo]:
            alo += 1
            blo += 1
        if alo > start_i:
            blocks.append((start_i, start_j, alo - start_i))
        end_i, end_j = ahi, bhi
        while end_i > alo and end_j > blo and a[end_i - 1] == b[end_j - 1]:
            end_i -= 1
            end_j -= 1
        if end_i < ahi:
            blocks.append((end_i, end_j, ahi - end_i))
        if alo == end_i or blo == end_j:
            continue
        anchors = _unique_anchors(a, alo, end_i, b, blo, end_j)
        if anchors:
            prev_i, prev_j = alo, blo
            for i, j in anchors:
                blocks.append((i, j, 1))
                if i > prev_i or j > prev_j:
                    stack.append((prev_i, i, prev_j, j))
                prev_i, prev_j = i + 1, j + 1
            if end_i > prev_i or end_j > prev_j:
                stack.append((prev_i, end_i, prev_j, end_j))
            continue
        i = j = size = 0
        if budget is None or budget >= end_j - blo:
            if budget is not None:
                budget -= end_j - blo
            if where is None:
                where = _positions(a)
            i, j, size = _best_split(a, alo, end_i, b, blo, end_j, where)
        if size:
            blocks.append((i, j, size))
            stack.append((i + size, end_i, j + size, end_j))
            stack.append((alo, i, blo, j))
        elif (end_i - alo) * (end_j - blo) <= _DIFFLIB_WINDOW:
            matcher = SequenceMatcher(None, a[alo:end_i], b[blo:end_j], autojunk=False)
            blocks.extend((alo + m.a, blo + m.b, m.size) for m in matcher.get_matching_blocks() if m.size)
    blocks.sort()
    merged: list[tuple[int, int, int]] = []
    for block in blocks:
        if merged and merged[-1][0] + merged[-1][2] == block[0] and merged[-1][1] + merged[-1][2] == block[1]:
            merged[-1] = (merged[-1][0], merged[-1][1], merged[-1][2] + block[2])
        else:
            merged.append(block)
    return merged


def _opcodes(
    blocks: list[tuple[int, int, int]], len_a: int, len_b: int
) -> Iterator[tuple[str, int, int, int, int]]:
    i = j = 0
    for bi, bj, size in [*blocks, (len_a, len_b, 0)]:
        if i < bi and j < bj:
            yield REPLACE, i, bi, j, bj
        elif i < bi:
            yield DELETE, i, bi, j, j
        elif j < bj:
            yield INSERT, i, i, j, bj
        if size:
            yield EQUAL, bi, bi + size, bj, bj + size
        i, j = bi + size, bj + size


# ---------------------------------------------------------------------------------------------
# result


class Segment(NamedTuple):
    """Rows of one op. `replace` pairs lines 1:1; `ignored` marks delete/insert of location lines."""

    op: str
    a_start: int  # 0-based line indices, [start, end)
    a_end: int
    b_start: int
    b_end: int
    ignored: bool = False

    @property
    def rows(self) -> int:
        return max(self.a_end - self.a_start, self.b_end - self.b_start)


class Row(NamedTuple):
    """One displayed row: line numbers are 1-based, None on the side without a line."""

    op: str
    a_no: int | None
    b_no: int | None
    ignored: bool  # a difference the options hide: a location line, or text equal once normalised


@dataclass(frozen=True)
class Hunk:
    row_start: int
    row_end: int
    a_start: int
    a_len: int
    b_start: int
    b_len: int


@dataclass
class DiffResult:
    a_lines: list[str]
    b_lines: list[str]
    options: DiffOptions
    segments: list[Segment]
    offsets: list[int] = field(default_factory=list)  # first row of each segment
    rows: int = 0
    changes: list[tuple[int, int]] = field(default_factory=list)  # change blocks as row ranges
    renames: dict[str, str] = field(default_factory=dict)  # A name -> B name, when numbering is ignored

    def __post_init__(self) -> None:
        offset = 0
        offsets = []
        changes: list[tuple[int, int]] = []
        for segment in self.segments:
            offsets.append(offset)
            size = segment.rows
            if segment.op != EQUAL and not segment.ignored:
                if changes and changes[-1][1] == offset:
                    changes[-1] = (changes[-1][0], offset + size)
                else:
                    changes.append((offset, offset + size))
            offset += size
        self.offsets, self.rows, self.changes = offsets, offset, changes

    # -- stats ---------------------------------------------------------------------------------
    @property
    def stats(self) -> dict[str, int]:
        added = removed = changed = 0
        for segment in self.segments:
            if segment.ignored:
                continue
            if segment.op == INSERT:
                added += segment.b_end - segment.b_start
            elif segment.op == DELETE:
                removed += segment.a_end - segment.a_start
            elif segment.op == REPLACE:
                changed += segment.a_end - segment.a_start
        return {"added": added, "removed": removed, "changed_lines": changed, "changes": len(self.changes)}

    @property
    def identical(self) -> bool:
        return not self.changes

    # -- rows ----------------------------------------------------------------------------------
    def iter_rows(self, start: int = 0, end: int | None = None) -> Iterator[Row]:
        """Rows in [start, end)."""
        end = self.rows if end is None else min(end, self.rows)
        if start >= end:
            return
        index = max(bisect_right(self.offsets, start) - 1, 0)
        a_lines, b_lines = self.a_lines, self.b_lines
        for segment in self.segments[index:]:
            base = self.offsets[index]
            index += 1
            if base >= end:
                return
            first = max(start - base, 0)
            last = min(end - base, segment.rows)
            op = segment.op
            for k in range(first, last):
                if op == EQUAL:
                    a, b = segment.a_start + k, segment.b_start + k
                    yield Row(EQUAL, a + 1, b + 1, a_lines[a] != b_lines[b])
                elif op == REPLACE:
                    yield Row(REPLACE, segment.a_start + k + 1, segment.b_start + k + 1, False)
                elif op == DELETE:
                    yield Row(DELETE, segment.a_start + k + 1, None, segment.ignored)
                else:
                    yield Row(INSERT, None, segment.b_start + k + 1, segment.ignored)

    def position(self, row: int) -> tuple[int, int]:
        """How many A and B lines come before a row."""
        index = max(bisect_right(self.offsets, row) - 1, 0)
        if not self.segments:
            return 0, 0
        segment = self.segments[index]
        k = row - self.offsets[index]
        if row >= self.rows:
            return len(self.a_lines), len(self.b_lines)
        a = segment.a_start + (k if segment.op != INSERT else 0)
        b = segment.b_start + (k if segment.op != DELETE else 0)
        return a, b

    # -- hunks -------------------------------------------------------------------------------------
    def hunks(self, context: int | None = None) -> list[Hunk]:
        """Change blocks with `context` rows around them, merged when they touch or nearly do."""
        context = self.options.context if context is None else context
        if not self.changes:
            return []
        if context < 0:
            ranges = [(0, self.rows)]
        else:
            ranges = []
            for start, end in self.changes:
                start, end = max(start - context, 0), min(end + context, self.rows)
                if start <= 2:  # never hide one or two rows behind an "expand" control
                    start = 0
                if end >= self.rows - 2:
                    end = self.rows
                if ranges and start - ranges[-1][1] <= 2:
                    ranges[-1] = (ranges[-1][0], end)
                else:
                    ranges.append((start, end))
        hunks = []
        for start, end in ranges:
            a0, b0 = self.position(start)
            a1, b1 = self.position(end)
            hunks.append(
                Hunk(start, end, a0 + 1 if a1 > a0 else a0, a1 - a0, b0 + 1 if b1 > b0 else b0, b1 - b0)
            )
        return hunks


# ---------------------------------------------------------------------------------------------
# renumbering check


class _Renames:
    """A one-to-one mapping of names of A to names of B, built in line order."""

    __slots__ = ("backward", "forward")

    def __init__(self) -> None:
        self.forward: dict[str, str] = {}
        self.backward: dict[str, str] = {}

    def agree(self, pairs: Iterable[tuple[str, str]]) -> bool:
        """Whether the pairs fit the mapping; if they do, they join it."""
        forward, backward = self.forward, self.backward
        pairs = list(pairs)
        for a_name, b_name in pairs:
            if forward.get(a_name, b_name) != b_name or backward.get(b_name, a_name) != a_name:
                return False
        for a_name, b_name in pairs:
            forward[a_name] = b_name
            backward[b_name] = a_name
        return True


def _check_renames(
    opcodes: list[tuple[str, int, int, int, int]],
    a_text: list[str],
    b_text: list[str],
    options: DiffOptions,
    renames: dict[str, str] | None = None,
) -> list[tuple[str, int, int, int, int]]:
    """Split equal runs where a line aligned only by ignoring numbering breaks the renaming.

    The renames accepted (A name -> B name) are added to `renames`.
    """
    renames = {} if renames is None else renames
    values, aliases = _Renames(), _Renames()
    out: list[tuple[str, int, int, int, int]] = []
    for op, a0, a1, b0, b1 in opcodes:
        if op != EQUAL:
            out.append((op, a0, a1, b0, b1))
            continue
        run_start = a0
        bad_start = -1
        for i in range(a0, a1):
            j = b0 + (i - a0)
            line_a, line_b = a_text[i], b_text[j]
            if line_a is _LOC_LINE_KEY:
                good = True
            else:
                if options.ssa and _FUNC_LINE.match(line_a):
                    renames.update(values.forward)
                    values = _Renames()
                good = True
                if line_a != line_b and '"' in line_a:
                    # numbering is dropped inside strings too; strings must not differ at all
                    good = _STRING.findall(line_a) == _STRING.findall(line_b)
                if good and options.ssa:
                    a_values = _SSA_NAME.findall(line_a)
                    b_values = a_values if line_a == line_b else _SSA_NAME.findall(line_b)
                    good = len(a_values) == len(b_values) and values.agree(zip(a_values, b_values))
                if good and options.alias and "#" in line_a:
                    a_aliases = _ALIAS_NAME.findall(line_a)
                    b_aliases = a_aliases if line_a == line_b else _ALIAS_NAME.findall(line_b)
                    good = len(a_aliases) == len(b_aliases) and aliases.agree(zip(a_aliases, b_aliases))
            if good and bad_start >= 0:
                out.append((REPLACE, bad_start, i, b0 + bad_start - a0, j))
                run_start, bad_start = i, -1
            elif not good and bad_start < 0:
                if i > run_start:
                    out.append((EQUAL, run_start, i, b0 + run_start - a0, j))
                bad_start = i
        if bad_start >= 0:
            out.append((REPLACE, bad_start, a1, b0 + bad_start - a0, b1))
        elif a1 > run_start:
            out.append((EQUAL, run_start, a1, b0 + run_start - a0, b1))
    renames.update(values.forward)
    renames.update(aliases.forward)
    return out


# ---------------------------------------------------------------------------------------------
# pairing inside changed blocks

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


def diff_texts(a_text: str, b_text: str, options: DiffOptions = DiffOptions()) -> DiffResult:
    """Diff two IR texts line by line, comparing normalised lines and keeping the originals."""
    a_lines, b_lines = split_lines(a_text), split_lines(b_text)
    a_compared, a_key_text, a_ignored = _prepare(a_lines, options, a_text)
    b_compared, b_key_text, b_ignored = _prepare(b_lines, options, b_text)
    a_keys, b_keys = _intern(a_key_text, b_key_text)
    opcodes = list(_opcodes(match_blocks(a_keys, b_keys, _ALIGN_EFFORT), len(a_keys), len(b_keys)))
    renames: dict[str, str] = {}
    if options.ssa or options.alias:
        opcodes = _check_renames(opcodes, a_compared, b_compared, options, renames)
        # lines equal as keys but renamed inconsistently must not pair as equal again
        a_keys, b_keys = _intern(a_compared, b_compared)
    # with both numberings ignored, replaced blocks hold no lines equal up to numbering
    segments = _segments(
        opcodes, a_keys, b_keys, a_compared, b_compared, a_ignored, b_ignored, options.ssa and options.alias
    )
    if options.ssa or options.alias:
        segments = _absorb_renamed_islands(segments, a_compared, b_compared)
    return DiffResult(a_lines, b_lines, options, segments, renames=renames)


_ISLAND = 2  # renamed-only lines stranded between larger changes, up to this many, join them


def _absorb_renamed_islands(segments: list[Segment], a_text: list[str], b_text: list[str]) -> list[Segment]:
    """Turn a short run of lines equal only up to renaming, between two larger changes, into a change.

    Inside a rewritten region a line like `%117 = llvm.bitcast %116` matches some renamed line of
    B whose operands were never mapped; left alone, such islands cut one change into many.
    """

    def is_change(segment: Segment) -> bool:
        return segment.op != EQUAL and not segment.ignored

    after_rows = [0] * (len(segments) + 1)  # rows of the change block starting at each segment
    for index in range(len(segments) - 1, -1, -1):
        after_rows[index] = segments[index].rows + after_rows[index + 1] if is_change(segments[index]) else 0
    out: list[Segment] = []
    before_rows = 0  # rows of the change block ending just before the current segment
    for index, segment in enumerate(segments):
        if (
            segment.op == EQUAL
            and segment.rows <= _ISLAND
            and before_rows > segment.rows
            and after_rows[index + 1] > segment.rows
            and all(a_text[segment.a_start + k] != b_text[segment.b_start + k] for k in range(segment.rows))
        ):
            segment = Segment(REPLACE, segment.a_start, segment.a_end, segment.b_start, segment.b_end)
        before_rows = before_rows + segment.rows if is_change(segment) else 0
        last = out[-1] if out else None
        if (
            last is not None
            and last.op == segment.op == REPLACE
            and last.a_end == segment.a_start
            and last.b_end == segment.b_start
        ):
            out[-1] = Segment(REPLACE, last.a_start, segment.a_end, last.b_start, segment.b_end)
        else:
            out.append(segment)
    return out


# ---------------------------------------------------------------------------------------------
# intra-line changes

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


# ---------------------------------------------------------------------------------------------
# applying hunks (the test of a diff: it must turn A into B)


def apply_hunks(a_lines: Sequence[str], hunks: Sequence[dict]) -> list[str]:
    """Rebuild B from A and JSON hunks: copy A between hunks, take each hunk's B side."""
    out: list[str] = []
    a_pos = 0  # lines of A consumed
    for hunk in hunks:
        hunk_a_start = hunk["a_start"] - 1 if hunk["a_len"] else hunk["a_start"]
        out.extend(a_lines[a_pos:hunk_a_start])
        for line in hunk["lines"]:
            if line["b"] is not None:
                out.append(line["b"])
        a_pos = hunk_a_start + hunk["a_len"]
    out.extend(a_lines[a_pos:])
    return out


# ---------------------------------------------------------------------------------------------
# cache


class DiffCache:
    """Diff results by (blob A, blob B, compared options), least recently used first out.

    Blobs never change, so entries never go stale. Bounded by count and by the text held
    (a 21,000-line LLVM-dialect snapshot is 7 MB); the newest entry always stays.
    """

    def __init__(self, capacity: int = 32, max_bytes: int = 192 << 20) -> None:
        self.capacity = capacity
        self.max_bytes = max_bytes
        self._entries: OrderedDict[tuple, tuple[DiffResult, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    @staticmethod
    def _size(result: DiffResult) -> int:
        lines = len(result.a_lines) + len(result.b_lines)
        text = sum(map(len, result.a_lines)) + sum(map(len, result.b_lines))
        return text + 64 * lines + 80 * len(result.segments)

    def get(self, key: tuple, compute: Callable[[], DiffResult]) -> DiffResult:
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                self._entries.move_to_end(key)
                self.hits += 1
                return entry[0]
            self.misses += 1
        result = compute()  # outside the lock: other diffs go on meanwhile
        size = self._size(result)
        with self._lock:
            if key not in self._entries:
                self._entries[key] = (result, size)
                self._bytes += size
            while len(self._entries) > 1 and (
                len(self._entries) > self.capacity or self._bytes > self.max_bytes
            ):
                _, (_, old_size) = self._entries.popitem(last=False)
                self._bytes -= old_size
        return result

    def __len__(self) -> int:
        return len(self._entries)
