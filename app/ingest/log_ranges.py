"""A plain log cut into byte ranges that separate processes scan (app/ingest/log_prescan.py), whose
records, put back in order and with their line numbers shifted, are those of one scan.

A range starts at an MLIR banner that follows a blank line. There one scan has closed whatever came
before (a blank line ends an MLIR dump; a banner at a line start ends an LLVM dump and gap text), no
banner is pending (parsers/logs/log.py sets `ambiguous` only for a banner directly after a banner), its
gap text was flushed, and what the scanner remembers of earlier banners (`semicolon_banners`) is set
by this banner alike. A range is scanned together with the next range's banner line, which ends the
range's last dump as it does in one scan, and the records from that line on are dropped (the next
range has them). A range's first read stops at a multiple of the chunk size, so that the scanner
sees the blocks one scan sees (where a dump over MAX_DUMP_BYTES is cut depends on them).

Every process plans a file's ranges alike (`plan`), from the same bytes, so that they need not talk.
"""

from __future__ import annotations

import dataclasses
import os
import re
from typing import BinaryIO

__all__ = ["RangeStream", "ends_before", "plan", "shifted"]

CUT = b"\n\n// -----// IR Dump "  # a range starts after the blank line
WINDOW = 1 << 20  # read at each planned cut to find the next banner, up to MAX_SEARCH
MAX_SEARCH = 16 << 20
_CUT_LINE = re.compile(r"^line (\d+)( of the log is longer than )")  # parsers/logs/log.py: cut_damage


def plan(path: str, range_bytes: int) -> list[tuple[int, int | None]]:
    """(start, end) of each range of the log at `path`; end None: to the end of the file. One range
    when `range_bytes` is 0 or the file is smaller."""
    size = os.path.getsize(path)
    if range_bytes <= 0 or size <= range_bytes:
        return [(0, None)]
    starts = [0]
    with open(path, "rb") as file:
        target = range_bytes
        while target < size:
            found = _next_cut(file, target)
            if found is None:
                break
            if found > starts[-1]:
                starts.append(found)
            target = max(found, target) + range_bytes
    return [(start, end) for start, end in zip(starts, [*starts[1:], None])]


def _next_cut(file: BinaryIO, offset: int) -> int | None:
    """The first range start at or after `offset` (within MAX_SEARCH), or None."""
    read = 0
    tail = b""
    while read < MAX_SEARCH:
        file.seek(offset + read)
        block = file.read(WINDOW)
        if not block:
            return None
        data = tail + block
        found = data.find(CUT)
        if found >= 0:
            return offset + read - len(tail) + found + 2
        tail = data[-(len(CUT) - 1):]
        read += len(block)
    return None


class RangeStream:
    """file[start:stop] for the scanner, first read cut at a multiple of `chunk_size`; `position` is
    the offset in the file reached so far."""

    def __init__(self, raw: BinaryIO, start: int, stop: int | None, chunk_size: int) -> None:
        self.raw = raw
        raw.seek(start)
        self.position = start
        self.stop = stop
        self.first = chunk_size - start % chunk_size if start % chunk_size else 0

    def read(self, size: int = -1) -> bytes:
        if self.first:
            size, self.first = min(size, self.first) if size >= 0 else self.first, 0
        if self.stop is not None:
            left = self.stop - self.position
            size = left if size < 0 else min(size, left)
        data = self.raw.read(size)
        self.position += len(data)
        return data


def next_banner_end(raw: BinaryIO, end: int) -> int:
    """The offset after the banner line at `end` (where the next range starts)."""
    raw.seek(end)
    return end + len(raw.readline())


def last_line(record) -> int:
    lines = getattr(record, "lines", None)
    return lines[-1][0] if lines is not None else record.line


def ends_before(held: list, banner_line: int) -> list:
    """The records of `held` before the next range's banner line."""
    return [record for record in held if last_line(record) < banner_line]


def shifted(record, lines: int):
    """A record of a range scanned alone, at its place in the log: `lines` lines come before it."""
    if not lines:
        return record
    if hasattr(record, "lines"):
        return dataclasses.replace(record, lines=[(number + lines, text) for number, text in record.lines])
    return dataclasses.replace(record, line=record.line + lines)


def shifted_damage(damage: str | None, lines: int) -> str | None:
    """A dump's damage text, which names a log line for a line the scanner cut (rare)."""
    if not lines or not damage or not damage.startswith("line "):
        return damage
    return _CUT_LINE.sub(lambda match: f"line {int(match.group(1)) + lines}{match.group(2)}", damage, count=1)
