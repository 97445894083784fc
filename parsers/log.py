"""Split a log byte stream into IR dumps and the gap text between them.

Works on large chunks and byte offsets rather than decoded lines: a dump body is found with
`bytes.find` and sliced out whole, so the Python-level work is per dump, not per line.
Damage is detected where it is cheap: a banner that starts mid-line (two writers interleaved),
a dump cut off by the next banner or by the end of the log, and unbalanced braces.

Speed (see bench/NOTES.md): the common case is an MLIR dump followed by a blank line and the next
banner. The fast path finds the next banner mark once, takes the body in front of it, and looks at
the body's bytes again only when they are new: a body equal to a recent one (most passes change
nothing) is recognised with one `startswith` comparison in place, and the recent body object, its
line count and its brace check are reused. Every other layout (gap text after a dump, a banner cut
into a line, a dump running over a chunk's end) takes the general path, which gives the same records.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import BinaryIO

from parsers import llvm_dump, mlir_dump
from parsers.records import Dump, DumpHeader, GapBlock, UnknownBanner

CHUNK_SIZE = 8 << 20
GAP_BATCH_LINES = 5000
_MARK = b"// -----//"  # any MLIR banner, wherever it appears
_MLIR_BANNER = b"// -----// "  # an MLIR banner, as _BANNER matches it at a line's start
_BANNER = re.compile(rb"^(?:// -----// |; \*\*\* IR Dump |\*\*\* IR Dump |# \*\*\* IR Dump )", re.MULTILINE)
# An LLVM dump has blank lines inside, so it runs until the next banner or an obvious non-IR line.
_LLVM_END = re.compile(
    rb"^(?:// -----// |; \*\*\* IR Dump |\*\*\* IR Dump |# \*\*\* IR Dump |===-|Traceback \(most recent call last\))",
    re.MULTILINE,
)
UNBALANCED = "unbalanced braces: the dump is incomplete or mixed with other output"
_NL = 10  # b"\n"[0]
_CR = 13
_BLANK_LINE = re.compile(rb"\n\n")  # the regex engine finds this twice as fast as bytes.find
# bytes.translate deleting all but these leaves a short string to count them in: one pass, not three.
_COUNTED = bytes(c for c in range(256) if c not in b"\n{}")
# A dump still open at a chunk's end is scanned again joined with the next chunk's head (so the fast
# path sees it whole), unless it is already this long.
_CARRY_MAX = 4 << 20

# Recently seen fast-path bodies, for recognising an unchanged pass without re-reading its body.
_RECENT_BYTES = 8 << 20
_RECENT_COUNT = 64
_HEADER_CACHE = 8192


class _Chunks:
    """Read a stream in big blocks and hand out (buffer, start, end) pieces, buffer[start:end] being
    whole lines (the stream's last piece may lack its newline). Blocks are scanned where they were
    read, without copying. Bytes that must be seen together with what follows are joined with the
    next block's head into a small piece of their own: a line cut by a block's end, and (when the
    scanner sets `carry`) the start of a dump still open at a piece's end, which is joined up to the
    end of the next banner line."""

    def __init__(self, stream: BinaryIO, chunk_size: int) -> None:
        self.stream = stream
        self.chunk_size = chunk_size
        self.carry = b""  # set by the scanner: the unscanned tail of the piece it was given

    def __iter__(self) -> Iterator[tuple[bytes, int, int]]:
        partial: list[bytes] = []  # unscanned bytes before block[start:] that end in no newline
        block, start = b"", 0  # block[start:] is not scanned yet
        while True:
            if start >= len(block):
                block, start = self.stream.read(self.chunk_size), 0
                if not block:
                    last = self.carry + b"".join(partial)
                    if last:
                        yield last, 0, len(last)
                    return
            carry, self.carry = self.carry, b""
            if carry or partial:
                cut = 0
                if carry:
                    mark = block.find(_MARK, start)
                    if mark >= 0:
                        cut = block.find(b"\n", mark) + 1
                if not cut:
                    cut = block.find(b"\n", start) + 1
                if not cut:  # no newline in the rest of the block: keep collecting
                    partial = [carry, *partial, block[start:]]
                    start = len(block)
                    continue
                joined = carry + b"".join(partial) + block[start:cut]
                partial, start = [], cut
                yield joined, 0, len(joined)
                continue
            cut = block.rfind(b"\n", start) + 1
            if cut > start:
                yield block, start, cut
            else:
                cut = start
            if cut < len(block):
                partial.append(block[cut:])
            start = len(block)


class _HeaderCache(dict):
    """Banner bytes -> parsed header. Logs repeat a few hundred banners many times over."""

    def parse(self, line: bytes) -> DumpHeader | None:
        try:
            return self[line]
        except KeyError:
            pass
        if len(self) >= _HEADER_CACHE:
            self.clear()
        header = self[line] = _parse_banner(line)
        return header


def _parse_banner(line: bytes) -> DumpHeader | None:
    text = line.rstrip(b"\r\n").decode("utf-8", "replace")
    if line.startswith(mlir_dump.PREFIX):
        return mlir_dump.parse_header(text)
    return llvm_dump.parse_header(text)


class _RecentBodies:
    """The last few fast-path bodies by length: (body, newline count, braces balanced)."""

    def __init__(self) -> None:
        self.by_length: dict[int, list[tuple[bytes, int, bool]]] = {}
        self.order: list[int] = []  # lengths, oldest first (one entry per body)
        self.size = 0
        self.last: tuple[bytes, int, bool] | None = None  # the latest body seen

    def find(self, chunk: bytes, pos: int, length: int) -> tuple[bytes, int, bool] | None:
        entries = self.by_length.get(length)
        if entries:
            for entry in reversed(entries):
                if chunk.startswith(entry[0], pos):
                    return entry
        return None

    def add(self, body: bytes, newlines: int, balanced: bool) -> None:
        length = len(body)
        self.last = (body, newlines, balanced)
        if length > _RECENT_BYTES // 4:
            return
        self.by_length.setdefault(length, []).append((body, newlines, balanced))
        self.order.append(length)
        self.size += length
        while self.size > _RECENT_BYTES or len(self.order) > _RECENT_COUNT:
            oldest = self.order.pop(0)
            entries = self.by_length[oldest]
            entries.pop(0)
            if not entries:
                del self.by_length[oldest]
            self.size -= oldest


class _Scanner:
    def __init__(self) -> None:
        self.line = 1  # line number at the scan position
        self.header: DumpHeader | None = None
        self.header_line = 0
        self.parts: list[bytes] = []
        self.gap = GapBlock()
        self.pending_damage: str | None = None
        self.headers = _HeaderCache()
        self.recent = _RecentBodies()
        self.carried = False  # the open dump's start was already carried into a joined piece

    # -- dumps -------------------------------------------------------------
    def start(self, header: DumpHeader, line: int, damage: str | None = None) -> None:
        self.header, self.header_line, self.parts = header, line, []
        self.pending_damage = damage
        self.carried = False

    def finish(self, damage: str | None = None, truncated: bool = False) -> Dump:
        assert self.header is not None
        body = b"".join(self.parts).rstrip(b"\r\n")
        damage = damage or self.pending_damage
        if damage is None and self.header.kind != "llvm" and body.count(b"{") != body.count(b"}"):
            damage = UNBALANCED
        dump = Dump(self.header, body, self.header_line, damage, truncated)
        self.header, self.parts, self.pending_damage = None, [], None
        return dump

    # -- gap text ------------------------------------------------------------
    def add_gap(self, data: bytes) -> Iterator[GapBlock]:
        if not data:
            return
        lines = data.split(b"\n")
        if lines[-1] == b"":
            lines.pop()
        for raw in lines:
            self.gap.lines.append((self.line, raw.rstrip(b"\r").decode("utf-8", "replace")))
            self.line += 1
            if len(self.gap.lines) >= GAP_BATCH_LINES:
                yield self.flush_gap()

    def flush_gap(self) -> GapBlock:
        block, self.gap = self.gap, GapBlock()
        return block


def scan_log(stream: BinaryIO, chunk_size: int = CHUNK_SIZE) -> Iterator[Dump | GapBlock | UnknownBanner]:
    """Yield dumps, gap-text blocks and unparseable banners in log order."""
    scan = _Scanner()
    chunks = _Chunks(stream, chunk_size)
    for chunk, pos, size in chunks:
        # A dump that ended exactly at the previous chunk's end: its blank line starts this chunk.
        if scan.header is not None and scan.header.kind != "llvm" and scan.parts and chunk.startswith(b"\n", pos):
            yield scan.finish()
            scan.line += 1
            pos += 1
        while pos < size:
            if scan.header is None:
                if chunk.startswith(_MLIR_BANNER, pos):  # the usual: a banner right after a dump
                    pos = yield from _open_dump(scan, chunk, pos, size)
                    continue
                match = _BANNER.search(chunk, pos, size)
                end = match.start() if match else size
                if end > pos:
                    yield from scan.add_gap(chunk[pos:end])
                if match is None:
                    break
                pos = yield from _open_dump(scan, chunk, end, size)
            elif scan.header.kind == "llvm":
                match = _LLVM_END.search(chunk, pos, size)
                end = match.start() if match else size
                scan.parts.append(chunk[pos:end])
                scan.line += chunk.count(b"\n", pos, end)
                pos = end
                if match is not None:
                    yield scan.finish()
            else:
                if not scan.parts:
                    dump = _fast_mlir(scan, chunk, pos, size)
                    if dump is not None:
                        pos = dump[1]
                        yield dump[0]
                        continue
                    if not scan.carried and size - pos <= _CARRY_MAX and chunk.find(_MARK, pos, size) < 0:
                        # The dump runs past this piece: scan it again joined with what follows.
                        scan.carried = True
                        chunks.carry = chunk[pos:size]
                        break
                pos = yield from _continue_mlir(scan, chunk, pos, size)
    if scan.header is not None:
        if scan.header.kind == "llvm":
            yield scan.finish()
        else:
            body = b"".join(scan.parts)
            complete = bool(body.strip()) and body.count(b"{") == body.count(b"}")
            yield scan.finish(None if complete else "the log ends inside this dump", truncated=not complete)
    if scan.gap.lines:
        yield scan.flush_gap()


def _open_dump(scan: _Scanner, chunk: bytes, start: int, size: int, damage: str | None = None):
    """Parse the banner at `start`; return the position after its line."""
    eol = chunk.find(b"\n", start, size)
    eol = size if eol < 0 else eol + 1
    banner = chunk[start:eol]
    # A second banner glued onto this one: two writers interleaved on one line.
    glued = banner.find(_MARK, len(_MARK))
    if glued > 0:
        damage = "banner interleaved with another dump's banner"
    header = scan.headers.parse(banner if glued <= 0 else banner[:glued])
    if scan.gap.lines:
        yield scan.flush_gap()
    if header is None:
        yield UnknownBanner(scan.line, banner.rstrip(b"\r\n").decode("utf-8", "replace"))
        yield from scan.add_gap(banner)
        return eol
    scan.start(header, scan.line, damage)
    scan.line += 1
    return eol


def _fast_mlir(scan: _Scanner, chunk: bytes, pos: int, size: int) -> tuple[Dump, int] | None:
    """The common case: the body, a blank line (or several), the next banner, all in this chunk.

    Returns the dump and the position after its blank line (further blank lines are gap text, as on
    the general path), or None for the general path. The body must not start with a newline, end with
    a CR, or hold a blank line or a banner mark: exactly when the general path would end the dump at
    the same place.
    """
    # An unchanged pass: the body equals the last one (already checked), followed by the separator.
    last = scan.recent.last
    if last is not None and chunk.startswith(last[0], pos):
        end = pos + len(last[0])
        mark = end
        while mark < size and chunk[mark] == _NL:
            mark += 1
        if mark - end >= 2 and chunk.startswith(_MARK, mark) and mark < size:
            return _emit(scan, last, end, mark)
    mark = chunk.find(_MARK, pos, size)
    if mark < 0:
        return None
    end = mark  # the body's end: chunk[end:mark] is two or more newlines
    while end > pos and chunk[end - 1] == _NL:
        end -= 1
    if mark - end < 2 or end <= pos:
        return None
    recent = scan.recent.find(chunk, pos, end - pos)
    if recent is None:
        body = chunk[pos:end]
        if body[0] == _NL or body[-1] == _CR or _BLANK_LINE.search(body):
            return None
        counted = body.translate(None, _COUNTED)
        recent = (body, counted.count(b"\n"), counted.count(b"{") == counted.count(b"}"))
        scan.recent.add(*recent)
    else:
        scan.recent.last = recent
    return _emit(scan, recent, end, mark)


def _emit(scan: _Scanner, body_facts: tuple[bytes, int, bool], end: int, mark: int) -> tuple[Dump, int]:
    """The dump whose body ends at `end`, the next banner being at `mark`; any blank lines beyond the
    one that ends the dump are gap lines (as add_gap would record them)."""
    body, newlines, balanced = body_facts
    header = scan.header
    assert header is not None
    damage = scan.pending_damage
    if damage is None and not balanced:
        damage = UNBALANCED
    dump = Dump(header, body, scan.header_line, damage, False, newlines + 1)
    scan.header, scan.pending_damage = None, None
    line = scan.line + newlines + 2  # the body's lines and the blank line
    extra = mark - end - 2
    if extra and len(scan.gap.lines) + extra >= GAP_BATCH_LINES:
        scan.line = line
        return dump, end + 2  # the gap text path batches these
    for _ in range(extra):
        scan.gap.lines.append((line, ""))
        line += 1
    scan.line = line
    return dump, mark


def _continue_mlir(scan: _Scanner, chunk: bytes, pos: int, size: int):
    """Consume MLIR body bytes from `pos`; the body ends at the first blank line."""
    end = chunk.find(b"\n\n", max(pos - 1, 0), size)
    stop = size if end < 0 else end + 1
    foreign = chunk.find(_MARK, pos, stop)
    if foreign >= 0:
        # Another banner before this dump's blank line: this dump was cut short or interleaved.
        scan.parts.append(chunk[pos:foreign])
        scan.line += chunk.count(b"\n", pos, foreign)
        at_line_start = foreign == 0 or chunk[foreign - 1] == _NL
        damage = (
            "cut off by the next dump's banner" if at_line_start else "another dump's banner inside this dump"
        )
        body = b"".join(scan.parts)
        if at_line_start and body.strip() and body.count(b"{") == body.count(b"}"):
            damage = None  # complete module, only the blank line is missing
        yield scan.finish(damage)
        if not at_line_start:
            # The interrupting banner starts mid-line: split the line there.
            return (yield from _open_dump(scan, chunk, foreign, size, "started in the middle of another line"))
        return foreign
    if end < 0:
        scan.parts.append(chunk[pos:size])
        scan.line += chunk.count(b"\n", pos, size)
        return size
    scan.parts.append(chunk[pos : end + 1])
    scan.line += chunk.count(b"\n", pos, end + 1) + 1  # body lines plus the blank line
    yield scan.finish()
    return end + 2
