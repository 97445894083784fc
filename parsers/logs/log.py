"""Split a log byte stream into IR dumps and the gap text between them.

Works on large chunks (parsers/logs/log_chunks.py) and byte offsets rather than decoded lines: a dump
body is found with `bytes.find` and sliced out whole, so the Python-level work is per dump, not per
line. Damage is detected where it is cheap: a banner that starts mid-line or is glued to another
(two writers interleaved), a dump cut off by the next banner or by the end of the log, and a body
that its printer cannot have written whole (parsers/logs/dump_damage.py: foreign bytes, unbalanced
braces, no module or two, #loc or !N numbering with gaps, an LLVM dump not ending as one does).
Pieces of broken banners in the gap text are reported. tests/test_fuzz_logs.py states, as
properties, what this guarantees.

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

from parsers.logs import llvm_dump, mlir_dump
from parsers.logs.dump_damage import (
    BANNER_PIECE,
    BROKEN_BANNER,
    COUNTED,
    NO_MODULE,
    PRINTABLE,
    body_damage,
    has_banner_piece,
)
from parsers.logs.log_chunks import MAX_LINE_BYTES, MLIR_MARK, Chunks
from parsers.records import CutLine, Dump, DumpHeader, GapBlock, UnknownBanner

__all__ = ["MAX_DUMP_BYTES", "MAX_LINE_BYTES", "NO_MODULE", "TOO_BIG", "body_damage", "scan_log"]

CHUNK_SIZE = 8 << 20
GAP_BATCH_LINES = 5000
_GLUED = re.compile(rb"// -----// |(?:; |# )?\*\*\* IR Dump ")  # where a banner glued onto another starts
_HEADS = (b"// -----// ", b"; *** IR Dump ", b"*** IR Dump ", b"# *** IR Dump ")
_LLVM_BANNER_TEXT = b"*** IR Dump "
_MLIR_BANNER = b"// -----// "  # an MLIR banner, as _BANNER matches it at a line's start
_BANNER = re.compile(rb"^(?:// -----// |; \*\*\* IR Dump |\*\*\* IR Dump |# \*\*\* IR Dump )", re.MULTILINE)
# An LLVM dump has blank lines inside, so it runs until the next banner or an obvious non-IR line
# (a timing report, a traceback, LLVM's fatal error, or MLIR text: another writer's dump).
# LLVM's pass-manager trace (-debug-pass-manager, which Triton's LLVM_IR_ENABLE_DUMP turns on) ends a
# dump too: its lines come between dumps and are log text, never IR (parsers/logs/pm_trace.py reads them).
_LLVM_END = re.compile(
    rb"^(?:// -----// |; \*\*\* IR Dump |\*\*\* IR Dump |# \*\*\* IR Dump |===-|Traceback \(most recent call last\)"
    rb"|#loc\d* = loc\(|module (?:attributes )?\{|LLVM ERROR: "
    rb"|Running (?:pass|analysis): |Invalidating (?:analysis: |all non-preserved analyses)"
    rb"|Clearing all analysis results for: |Skipping pass"
    # An MLIR diagnostic ("/path/k.py:47:31: error: ...", "<unknown>:0: error: ...") or a Python
    # warning: the next compile's output; no IR line starts with "/" or "<".
    rb"|(?:/[^\n]*?:\d+:\d+|<unknown>:0): (?:error|warning|note|remark): "
    rb"|/[^\n]*?\.py:\d+: \w*(?:Warning|Error): )",  # a Python warning ("/x/semantic.py:1640: UserWarning: ")
    re.MULTILINE,
)
# A machine-code (MIR) dump holds one function and ends with this line: what follows is log text,
# even when no banner comes next (the compile's last dump, then the next compile's errors).
_MIR_END = re.compile(rb"^# End machine code for function [^\n]*\n", re.MULTILINE)
AMBIGUOUS = "its banner follows another banner directly: which of the two dumps this body belongs to is unknown"
_NL = 10  # b"\n"[0]
_CR = 13
_BLANK_END = re.compile(rb"\n\r?\n")  # a body's end: its last newline, then a blank line (CRLF logs too)
# A dump still open at a chunk's end is scanned again joined with the next chunk's head (so the fast
# path sees it whole), unless it is already this long.
_CARRY_MAX = 4 << 20
# Memory stays bounded by these however the input is shaped: a longer line keeps its first
# MAX_LINE_BYTES (parsers/logs/log_chunks.py; the rest is reported, not stored), and a longer dump ends
# there as damaged (the rest is read as log text). Real dumps are a few MB; a runaway print or binary
# junk is not IR.
MAX_DUMP_BYTES = 64 << 20
TOO_BIG = f"the dump is larger than {MAX_DUMP_BYTES >> 20} MiB: cut there, the rest is read as log text"

# Recently seen fast-path bodies, for recognising an unchanged pass without re-reading its body.
_RECENT_BYTES = 8 << 20
_RECENT_COUNT = 64
_HEADER_CACHE = 8192


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
    """The last few fast-path bodies by length: (body, newline count, body_damage)."""

    def __init__(self) -> None:
        self.by_length: dict[int, list[tuple[bytes, int, str | None]]] = {}
        self.order: list[int] = []  # lengths, oldest first (one entry per body)
        self.size = 0
        self.last: tuple[bytes, int, str | None] | None = None  # the latest body seen

    def find(self, chunk: bytes, pos: int, length: int) -> tuple[bytes, int, str | None] | None:
        entries = self.by_length.get(length)
        if entries:
            for entry in reversed(entries):
                if chunk.startswith(entry[0], pos):
                    return entry
        return None

    def add(self, body: bytes, newlines: int, damage: str | None) -> None:
        length = len(body)
        self.last = (body, newlines, damage)
        if length > _RECENT_BYTES // 4:
            return
        self.by_length.setdefault(length, []).append((body, newlines, damage))
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
        self.ambiguous = False  # the last MLIR banner was followed by another banner at once
        self.cut_line = 0  # the last line _Chunks cut short: a dump holding it is damaged
        # The log's LLVM banners start "; ***" (LLVM 16 and later), or it holds MLIR banners, or
        # other output is mixed in: a "*** X on Y ***" banner is then one whose "; " was lost.
        self.semicolon_banners = False

    def cut_damage(self, last_line: int) -> str | None:
        if self.header_line < self.cut_line <= last_line:
            return f"line {self.cut_line} of the log is longer than {MAX_LINE_BYTES >> 20} MiB: cut there"
        return None

    # -- dumps -------------------------------------------------------------
    def start(self, header: DumpHeader, line: int, damage: str | None = None) -> None:
        self.header, self.header_line, self.parts = header, line, []
        self.pending_damage = damage
        self.carried = False

    def finish(self, damage: str | None = None, truncated: bool = False) -> Dump:
        assert self.header is not None
        body = b"".join(self.parts).rstrip(b"\r\n")
        empty_ok = "omitted" in (self.header.pass_options or "")
        damage = damage or self.pending_damage or self.cut_damage(self.line) or body_damage(
            body, self.header.kind, empty_ok=empty_ok
        )
        dump = Dump(self.header, body, self.header_line, damage, truncated)
        self.header, self.parts, self.pending_damage = None, [], None
        return dump

    def oversized(self) -> bool:
        return sum(map(len, self.parts)) > MAX_DUMP_BYTES

    # -- gap text ------------------------------------------------------------
    def add_gap(self, data: bytes, pieces: bool = True) -> Iterator[GapBlock | UnknownBanner]:
        if not data:
            return
        lines = data.split(b"\n")
        if lines[-1] == b"":
            lines.pop()
        # Text of a banner that other output broke (split over lines, cut short) is reported as an
        # unknown banner, so the user learns a dump was not read; its lines stay log text.
        pieces = pieces and has_banner_piece(data)
        for raw in lines:
            text = raw.rstrip(b"\r").decode("utf-8", "replace")
            if pieces and BANNER_PIECE.search(raw):
                if self.gap.lines:
                    yield self.flush_gap()
                yield UnknownBanner(self.line, text)
            self.gap.lines.append((self.line, text))
            self.line += 1
            if len(self.gap.lines) >= GAP_BATCH_LINES:
                yield self.flush_gap()

    def flush_gap(self) -> GapBlock:
        block, self.gap = self.gap, GapBlock()
        return block


def scan_log(stream: BinaryIO, chunk_size: int = CHUNK_SIZE) -> Iterator[Dump | GapBlock | UnknownBanner]:
    """Yield dumps, gap-text blocks and unparseable banners in log order."""
    scan = _Scanner()
    for record in _scan_log(scan, stream, chunk_size):
        kind = type(record)
        if kind is UnknownBanner or (kind is Dump and record.damage):
            scan.semicolon_banners = True  # mixed output: a "*** ... on X ***" banner may have lost "; "
        yield record


def _scan_log(scan: _Scanner, stream: BinaryIO, chunk_size: int) -> Iterator[Dump | GapBlock | UnknownBanner]:
    chunks = Chunks(stream, chunk_size)
    for chunk, pos, size in chunks:
        if chunks.cut is not None:
            before, kept, dropped = chunks.cut
            chunks.cut = None
            scan.cut_line = scan.line + before
            yield CutLine(scan.cut_line, kept, dropped)
        # A dump that ended exactly at the previous chunk's end (or whose banner did: an empty dump):
        # its blank line starts this chunk.
        if scan.header is not None and scan.header.kind != "llvm":
            blank = 1 if chunk.startswith(b"\n", pos) else 2 if chunk.startswith(b"\r\n", pos) else 0
            if blank:
                yield scan.finish()
                scan.line += 1
                pos += blank
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
                mir_end = _MIR_END.search(chunk, pos, end)
                if mir_end is not None:
                    match, end = mir_end, mir_end.end()
                scan.parts.append(chunk[pos:end])
                scan.line += chunk.count(b"\n", pos, end)
                pos = end
                if match is not None:
                    yield scan.finish()
                elif scan.oversized():
                    yield scan.finish(TOO_BIG)
            else:
                if not scan.parts:
                    dump = _fast_mlir(scan, chunk, pos, size)
                    if dump is not None:
                        pos = dump[1]
                        yield dump[0]
                        continue
                    if not scan.carried and size - pos <= _CARRY_MAX and chunk.find(MLIR_MARK, pos, size) < 0:
                        # The dump runs past this piece: scan it again joined with what follows.
                        scan.carried = True
                        chunks.carry = chunk[pos:size]
                        break
                pos = yield from _continue_mlir(scan, chunk, pos, size)
    if scan.header is not None:
        # Complete only if whole by body_damage and its last line has its newline: a writer ends
        # every line, so a log ending mid-line was cut there.
        body = b"".join(scan.parts)
        tail = body[body.rfind(b"\n") + 1 :]
        if scan.header.kind == "llvm" and len(tail) >= 3 and any(head.startswith(tail) for head in _HEADS):
            # The log was cut inside the next banner: the LLVM dump (which only a banner ends)
            # ended before it; the piece is reported as a banner.
            scan.parts = [body[: len(body) - len(tail)]]
            body = scan.parts[0]
        else:
            tail = b""
        complete = body.endswith(b"\n") and body_damage(body.rstrip(b"\r\n"), scan.header.kind) is None
        yield scan.finish(None if complete else "the log ends inside this dump", truncated=not complete)
        if tail:
            yield UnknownBanner(scan.line, tail.decode("utf-8", "replace"))
            yield from scan.add_gap(tail, pieces=False)
    if scan.gap.lines:
        yield scan.flush_gap()


def _open_dump(scan: _Scanner, chunk: bytes, start: int, size: int, damage: str | None = None):
    """Parse the banner at `start`; return the position after its line."""
    ambiguous, scan.ambiguous = scan.ambiguous, False  # it concerns this banner only
    eol = chunk.find(b"\n", start, size)
    eol = size if eol < 0 else eol + 1
    banner = chunk[start:eol]
    # A second banner glued onto this one: two writers interleaved on one line.
    glued = banner.find(MLIR_MARK, len(MLIR_MARK))
    second = _GLUED.search(banner, banner.find(b"IR Dump ") + 8)
    if second is not None and (glued < 0 or second.start() < glued):
        glued = second.start()
    if glued > 0:
        damage = "banner interleaved with another dump's banner"
    elif banner.rstrip(b"\r\n").translate(None, PRINTABLE):
        damage = "the banner holds bytes an IR printer never writes: binary data or other output is mixed in"
    body_start = 0
    if glued <= 0:
        body_start = (mlir_dump if banner.startswith(MLIR_MARK) else llvm_dump).glued_body_start(banner)
    if body_start:
        banner = banner[:body_start]  # the rest of the line is the body's first line
    header = scan.headers.parse(banner if glued <= 0 else banner[:glued])
    if scan.gap.lines:
        yield scan.flush_gap()
    if header is None:
        yield UnknownBanner(scan.line, banner.rstrip(b"\r\n").decode("utf-8", "replace"))
        yield from scan.add_gap(banner, pieces=False)
        return eol
    if ambiguous:
        damage = damage or AMBIGUOUS
    if banner.startswith((b"; *** ", MLIR_MARK)):
        scan.semicolon_banners = True
    if banner.startswith(b"*** ") and (
        (scan.semicolon_banners and llvm_dump.names_its_unit(header)) or banner.rstrip().endswith(b":")
    ):
        # LLVM 15 and older print new-PM banners without "; ". In a log of "; ***" banners (LLVM 16
        # on) or of MLIR ones (Triton, whose LLVM is newer), a new-PM banner ("X on Y") without it is
        # the tail of a "; *** ... on Y ***" banner whose head other output took; a "# *** ...:"
        # banner ends in ":". Legacy banners never had "; " (old LLVM's name no pass argument).
        damage = damage or "the banner's head is missing: other output is mixed into it"
    scan.start(header, scan.line, damage)
    if body_start:
        return start + body_start  # the line is counted with the body
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
        if mark - end >= 2 and chunk.startswith(MLIR_MARK, mark) and mark < size and last[2] != BROKEN_BANNER:
            return _emit(scan, last, end, mark)
    mark = chunk.find(MLIR_MARK, pos, size)
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
        if body[0] == _NL or body[-1] == _CR or _BLANK_END.search(body):
            return None  # a blank line inside (a CRLF one too) ends the dump there: the general path
        counted = body.translate(None, COUNTED)
        recent = (body, counted.count(b"\n"), body_damage(body, "mlir", counted))
        scan.recent.add(*recent)
    else:
        scan.recent.last = recent
    if recent[2] == BROKEN_BANNER:
        return None  # perhaps an LLVM banner inside: the general path ends the dump there
    return _emit(scan, recent, end, mark)


def _emit(scan: _Scanner, body_facts: tuple[bytes, int, str | None], end: int, mark: int) -> tuple[Dump, int]:
    """The dump whose body ends at `end`, the next banner being at `mark`; any blank lines beyond the
    one that ends the dump are gap lines (as add_gap would record them)."""
    body, newlines, body_problem = body_facts
    header = scan.header
    assert header is not None
    damage = scan.pending_damage or scan.cut_damage(scan.header_line + newlines + 1) or body_problem
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


def _llvm_banner_line(chunk: bytes, start: int, end: int) -> int:
    """Where the first LLVM banner line in chunk[start:end] starts ("*** IR Dump ", maybe after "; " or
    "# "), or -1. A literal find: a multiline regex would try every position."""
    found = chunk.find(_LLVM_BANNER_TEXT, start, end)
    while found >= 0:
        line = chunk.rfind(b"\n", 0, found) + 1
        if line >= start and chunk[line:found] in (b"", b"; ", b"# "):
            return line
        found = chunk.find(_LLVM_BANNER_TEXT, found + 1, end)
    return -1


def _continue_mlir(scan: _Scanner, chunk: bytes, pos: int, size: int):
    """Consume MLIR body bytes from `pos`; the body ends at the first blank line ("\n" or "\r\n")."""
    blank = _BLANK_END.search(chunk, max(pos - 1, 0), size)
    end = blank.start() if blank else -1
    stop = size if end < 0 else end + 1
    foreign = chunk.find(MLIR_MARK, pos, stop)
    llvm = _llvm_banner_line(chunk, pos, stop if foreign < 0 else foreign)
    if llvm >= 0:  # an LLVM banner at a line start ends the MLIR dump as an MLIR one does
        foreign = llvm
    if foreign >= 0:
        # Another banner before this dump's blank line: this dump was cut short or interleaved.
        scan.parts.append(chunk[pos:foreign])
        scan.line += chunk.count(b"\n", pos, foreign)
        at_line_start = foreign == 0 or chunk[foreign - 1] == _NL
        damage = (
            "cut off by the next dump's banner" if at_line_start else "another dump's banner inside this dump"
        )
        body = b"".join(scan.parts).rstrip(b"\r\n")
        if at_line_start and body_damage(body, scan.header.kind) is None:
            damage = None  # complete module, only the blank line is missing
        # Two banners in a row: the body that follows is one of them, which one is unknown.
        scan.ambiguous = at_line_start and not body.strip()
        yield scan.finish(damage)
        if not at_line_start:
            # The interrupting banner starts mid-line: split the line there.
            return (yield from _open_dump(scan, chunk, foreign, size, "started in the middle of another line"))
        return foreign
    if end < 0:
        scan.parts.append(chunk[pos:size])
        scan.line += chunk.count(b"\n", pos, size)
        if scan.oversized():
            yield scan.finish(TOO_BIG)
        return size
    scan.parts.append(chunk[pos : end + 1])
    scan.line += chunk.count(b"\n", pos, end + 1) + 1  # body lines plus the blank line
    yield scan.finish()
    return blank.end()
