"""Reading one uploaded file after its head was sniffed: the head read again first, the whole file
read when it is small enough, or drained to its size and hash."""

from __future__ import annotations

import hashlib
import io
from collections.abc import Callable
from typing import BinaryIO

from app.ingest.state import IngestError

MAX_SMALL_FILE = 512 << 20  # a single stage file or source larger than this is not read whole
SKIP_READ = 8 << 20  # what `skip` reads at a time where it cannot seek


class PrefixedStream(io.RawIOBase):
    """A stream whose first bytes were already read for sniffing; reads them again first."""

    def __init__(self, head: bytes, rest: BinaryIO, on_read: Callable[[int], None]) -> None:
        self.head, self.rest, self.on_read = head, rest, on_read

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        if self.head:
            if size < 0 or size >= len(self.head):
                data, self.head = self.head, b""
                if size < 0:
                    data += self.rest.read()
                else:
                    data += self.rest.read(size - len(data)) if size > len(data) else b""
            else:
                data, self.head = self.head[:size], self.head[size:]
        else:
            data = self.rest.read(size)
        self.on_read(len(data))
        return data

    def readinto(self, buffer) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def skip(self, count: int) -> int:
        """Move `count` bytes on (fewer at the end) without handing them out: a seek where the file
        allows it, a read otherwise. Counted as read."""
        taken = min(count, len(self.head))
        self.head = self.head[taken:]
        moved = 0
        if taken < count and self.rest.seekable():
            before = self.rest.tell()
            moved = self.rest.seek(count - taken, io.SEEK_CUR) - before
        else:
            while taken + moved < count and (data := self.rest.read(min(count - taken - moved, SKIP_READ))):
                moved += len(data)
        self.on_read(taken + moved)
        return taken + moved


def read_small(stream: BinaryIO, path: str) -> bytes:
    data = stream.read(MAX_SMALL_FILE + 1)
    if len(data) > MAX_SMALL_FILE:
        raise IngestError(f"{path} is larger than {MAX_SMALL_FILE >> 20} MB")
    return data


def drain(stream: BinaryIO) -> tuple[int, str]:
    """Read a file to its end without keeping it: its size and sha256."""
    digest, size = hashlib.sha256(), 0
    while block := stream.read(1 << 20):
        digest.update(block)
        size += len(block)
    return size, digest.hexdigest()
