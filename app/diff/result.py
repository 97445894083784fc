"""What a diff is: the options it compared under, its segments, rows and hunks, and `apply_hunks`,
the check that a diff's hunks turn A into B.

The result lists *segments* (runs of rows with one op) over a row space; hunks, change blocks and
stats are computed from them. Rows always point at the original lines: what is compared is
normalised, what is shown is not.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

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
    notes: list[str] = field(default_factory=list)  # how the comparison went beyond the options

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
