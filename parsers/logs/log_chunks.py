"""A log stream read in big blocks and handed out as pieces of whole lines, for parsers/logs/log.py.

Blocks are scanned where they were read, without copying; only what must be seen together with
the next block (a line cut by the block's end, a dump still open there) is joined into a small
piece of its own. A line longer than MAX_LINE_BYTES keeps its first MAX_LINE_BYTES (the rest is
counted and reported, not stored), so memory stays bounded however the input is shaped.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import BinaryIO

MLIR_MARK = b"// -----//"  # any MLIR banner, wherever it appears
MAX_LINE_BYTES = 8 << 20


class Chunks:
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
        # For the next piece: (newlines before its cut line, bytes of it kept, bytes dropped).
        self.cut: tuple[int, int, int] | None = None
        self._dropped = 0

    def __iter__(self) -> Iterator[tuple[bytes, int, int]]:
        partial: list[bytes] = []  # unscanned bytes before block[start:] that end in no newline
        block, start = b"", 0  # block[start:] is not scanned yet
        while True:
            if start >= len(block):
                block, start = self.stream.read(self.chunk_size), 0
                if not block:
                    last = self._joined(self.carry, partial, b"")
                    if last:
                        yield last, 0, len(last)
                    return
            carry, self.carry = self.carry, b""
            if carry or partial:
                cut = 0
                if carry:
                    mark = block.find(MLIR_MARK, start)
                    if mark >= 0:
                        cut = block.find(b"\n", mark) + 1
                if not cut:
                    cut = block.find(b"\n", start) + 1
                if not cut:  # no newline in the rest of the block: keep collecting, up to a limit
                    room = MAX_LINE_BYTES - sum(map(len, partial))
                    if room > 0:
                        partial.append(block[start : start + room])
                    self._dropped += max(0, len(block) - start - max(room, 0))
                    start = len(block)
                    self.carry = carry
                    continue
                joined = self._joined(carry, partial, block[start:cut])
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

    def _capped(self, line: bytes) -> bytes:
        """The first MAX_LINE_BYTES of a line without its newline yet; the rest is counted, not kept."""
        if len(line) <= MAX_LINE_BYTES:
            return line
        self._dropped += len(line) - MAX_LINE_BYTES
        return line[:MAX_LINE_BYTES]

    def _joined(self, carry: bytes, partial: list[bytes], rest: bytes) -> bytes:
        """carry + the line cut by the block's end + its rest; a line over the limit is cut there, and
        `cut` tells the scanner which line of the piece it was and how much of it was dropped."""
        end = rest.find(b"\n") + 1 or len(rest)  # `rest` may run on past the line, to a banner
        line = b"".join(partial) + rest[:end]
        if self._dropped or len(line) > MAX_LINE_BYTES + 1:
            newline = line.endswith(b"\n")
            kept = self._capped(line[:-1] if newline else line)
            self.cut = (carry.count(b"\n"), len(kept), self._dropped)
            self._dropped = 0
            line = kept + (b"\n" if newline else b"")
        return carry + line + rest[end:]
