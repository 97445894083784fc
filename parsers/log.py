"""Split a log byte stream into IR dumps and the gap text between them.

Works on large chunks and byte offsets rather than decoded lines: a dump body is found with
`bytes.find` and sliced out whole, so the Python-level work is per dump, not per line.
Damage is detected where it is cheap: a banner that starts mid-line (two writers interleaved),
a dump cut off by the next banner or by the end of the log, and unbalanced braces.
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
_BANNER = re.compile(rb"^(?:// -----// |; \*\*\* IR Dump |\*\*\* IR Dump |# \*\*\* IR Dump )", re.M)
# An LLVM dump has blank lines inside, so it runs until the next banner or an obvious non-IR line.
_LLVM_END = re.compile(
    rb"^(?:// -----// |; \*\*\* IR Dump |\*\*\* IR Dump |# \*\*\* IR Dump |===-|Traceback \(most recent call last\))",
    re.M,
)


def _chunks(stream: BinaryIO, chunk_size: int) -> Iterator[bytes]:
    """Yield chunks that end at a newline (the last may not)."""
    carry = b""
    while True:
        block = stream.read(chunk_size)
        if not block:
            if carry:
                yield carry
            return
        block = carry + block if carry else block
        cut = block.rfind(b"\n")
        if cut < 0:
            carry = block
            continue
        carry = block[cut + 1 :]
        yield block[: cut + 1]


def _parse_banner(line: bytes) -> DumpHeader | None:
    text = line.rstrip(b"\r\n").decode("utf-8", "replace")
    if line.startswith(mlir_dump.PREFIX):
        return mlir_dump.parse_header(text)
    return llvm_dump.parse_header(text)


class _Scanner:
    def __init__(self) -> None:
        self.line = 1  # line number at the scan position
        self.header: DumpHeader | None = None
        self.header_line = 0
        self.parts: list[bytes] = []
        self.gap = GapBlock()
        self.pending_damage: str | None = None

    # -- dumps -------------------------------------------------------------
    def start(self, header: DumpHeader, line: int, damage: str | None = None) -> None:
        self.header, self.header_line, self.parts = header, line, []
        self.pending_damage = damage

    def finish(self, damage: str | None = None, truncated: bool = False) -> Dump:
        assert self.header is not None
        body = b"".join(self.parts).rstrip(b"\r\n")
        damage = damage or self.pending_damage
        if damage is None and self.header.kind != "llvm" and body.count(b"{") != body.count(b"}"):
            damage = "unbalanced braces: the dump is incomplete or mixed with other output"
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
    for chunk in _chunks(stream, chunk_size):
        pos = 0
        size = len(chunk)
        # A dump that ended exactly at the previous chunk's end: its blank line starts this chunk.
        if scan.header is not None and scan.header.kind != "llvm" and scan.parts and chunk.startswith(b"\n"):
            yield scan.finish()
            scan.line += 1
            pos = 1
        while pos < size:
            if scan.header is None:
                match = _BANNER.search(chunk, pos)
                end = match.start() if match else size
                yield from scan.add_gap(chunk[pos:end])
                if match is None:
                    pos = size
                    break
                pos = yield from _open_dump(scan, chunk, end)
            elif scan.header.kind == "llvm":
                match = _LLVM_END.search(chunk, pos)
                end = match.start() if match else size
                scan.parts.append(chunk[pos:end])
                scan.line += chunk.count(b"\n", pos, end)
                pos = end
                if match is not None:
                    yield scan.finish()
            else:
                pos = yield from _continue_mlir(scan, chunk, pos)
    if scan.header is not None:
        if scan.header.kind == "llvm":
            yield scan.finish()
        else:
            body = b"".join(scan.parts)
            complete = bool(body.strip()) and body.count(b"{") == body.count(b"}")
            yield scan.finish(None if complete else "the log ends inside this dump", truncated=not complete)
    if scan.gap.lines:
        yield scan.flush_gap()


def _open_dump(scan: _Scanner, chunk: bytes, start: int, damage: str | None = None):
    """Parse the banner at `start`; return the position after its line."""
    eol = chunk.find(b"\n", start)
    eol = len(chunk) if eol < 0 else eol + 1
    banner = chunk[start:eol]
    # A second banner glued onto this one: two writers interleaved on one line.
    glued = banner.find(_MARK, len(_MARK))
    if glued > 0:
        damage = "banner interleaved with another dump's banner"
    header = _parse_banner(banner if glued <= 0 else banner[:glued])
    if scan.gap.lines:
        yield scan.flush_gap()
    if header is None:
        yield UnknownBanner(scan.line, banner.rstrip(b"\r\n").decode("utf-8", "replace"))
        yield from scan.add_gap(banner)
        return eol
    scan.start(header, scan.line, damage)
    scan.line += 1
    return eol


def _continue_mlir(scan: _Scanner, chunk: bytes, pos: int):
    """Consume MLIR body bytes from `pos`; the body ends at the first blank line."""
    end = chunk.find(b"\n\n", max(pos - 1, 0))
    stop = len(chunk) if end < 0 else end + 1
    foreign = chunk.find(_MARK, pos, stop)
    if foreign >= 0:
        # Another banner before this dump's blank line: this dump was cut short or interleaved.
        scan.parts.append(chunk[pos:foreign])
        scan.line += chunk.count(b"\n", pos, foreign)
        at_line_start = foreign == 0 or chunk[foreign - 1 : foreign] == b"\n"
        damage = (
            "cut off by the next dump's banner" if at_line_start else "another dump's banner inside this dump"
        )
        body = b"".join(scan.parts)
        if at_line_start and body.strip() and body.count(b"{") == body.count(b"}"):
            damage = None  # complete module, only the blank line is missing
        yield scan.finish(damage)
        if not at_line_start:
            # The interrupting banner starts mid-line: split the line there.
            scan.line += 0
            return (yield from _open_dump(scan, chunk, foreign, "started in the middle of another line"))
        return foreign
    if end < 0:
        scan.parts.append(chunk[pos:])
        scan.line += chunk.count(b"\n", pos)
        return len(chunk)
    scan.parts.append(chunk[pos : end + 1])
    scan.line += chunk.count(b"\n", pos, end + 1) + 1  # body lines plus the blank line
    yield scan.finish()
    return end + 2
