"""The layers a byte goes through on its way out of an input: replayable heads (to sniff magic bytes
without seeking), decoders, metering against the walk's limits, and the stream handed to the caller.
"""

from __future__ import annotations

import bz2
import contextlib
import gzip
import io
import lzma
import os
import stat
import struct
import tarfile
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import BinaryIO, Protocol, cast

import zstandard

from parsers.inputs.source_limits import Corrupt, InputLimitExceeded, WalkBudget
from parsers.inputs.source_names import describe, display_path, fmt_bytes

REPLAY_BYTES = 256 << 10  # a one-pass stream may be re-opened until this much of it was read
BOMB_FLOOR = 64 << 20  # the ratio test starts here: small files can legitimately compress absurdly well


@dataclass(frozen=True)
class InputFile:
    """One file found in the inputs. ``open()`` is valid only until the walker moves on."""

    path: str  # display path, '/'-separated: "run.tar.xz/run/dump.log", "folder/src/k.py", "dump.log"
    size: int | None  # uncompressed size when known
    _opener: Callable[[], BinaryIO] = field(repr=False, compare=False)
    origin: str | None = None  # the file's own path, for a file of the file system (not an archive's)

    def open(self) -> BinaryIO:
        """A fresh binary stream from the start of the file; read it sequentially.

        Files inside archives are read straight from the archive stream, so a second ``open()`` works
        only while the earlier stream has read less than 256 KiB (enough to sniff a header first).
        A stream whose archive turns out to be corrupt ends early; the walker records it in ``skipped``.
        """
        return self._opener()


class Readable(Protocol):
    def read(self, size: int = -1, /) -> bytes: ...

    def close(self) -> None: ...


@dataclass
class Blob:
    """A file-like thing before we know what it is: plain file, archive or compressed stream."""

    path: str  # internal display path (may hold surrogates; cleaned by display_path)
    size: int | None
    open: Callable[[], Readable]  # a stream from the start; one-pass sources replay a short head
    charged: bool  # its bytes were already counted against max_total_bytes by an enclosing layer
    seekable: Callable[[], BinaryIO] | None = None  # real random access (for zip) when we have it
    origin: str | None = None  # the file system path of a plain file


@dataclass
class HighWater:
    """How far any stream of one file has been read: re-reading the same bytes is not charged again."""

    value: int = 0


@dataclass
class Lease:
    """The streams handed out for the current InputFile, closed when the walker moves on."""

    expired: bool = False
    streams: list[io.BufferedReader] = field(default_factory=list)

    def expire(self) -> None:
        self.expired = True
        for stream in self.streams:
            with contextlib.suppress(Exception):
                stream.close()
        self.streams.clear()


class StaleStream(ValueError):
    """A stream used after the walker moved past its file."""


# Errors that the decoders, tarfile and zipfile raise on bad data.
CORRUPT_ERRORS: tuple[type[BaseException], ...] = (
    EOFError,
    OSError,  # includes gzip.BadGzipFile
    ValueError,
    zlib.error,
    lzma.LZMAError,
    zstandard.ZstdError,
    tarfile.TarError,
    zipfile.BadZipFile,
    struct.error,
    NotImplementedError,
)
# Ours: never re-tag these on the way up.
PASS_THROUGH: tuple[type[BaseException], ...] = (Corrupt, InputLimitExceeded, StaleStream)

# The decoded stream is closed by its MeteredReader, not by a with block.
DECODERS: dict[str, Callable[[Readable], Readable]] = {
    "gz": lambda raw: gzip.GzipFile(fileobj=cast(BinaryIO, raw), mode="rb"),
    "xz": lambda raw: lzma.LZMAFile(cast(BinaryIO, raw)),  # noqa: SIM115
    "bz2": lambda raw: bz2.BZ2File(cast(BinaryIO, raw)),
    "zst": lambda raw: zstandard.ZstdDecompressor().stream_reader(
        raw, read_across_frames=True, closefd=False
    ),
}


class Reader(io.RawIOBase):
    """Base for our raw streams: subclasses implement ``_read(size)`` with size > 0."""

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1, /) -> bytes:
        if size is None or size < 0:
            return self.readall()
        return self._read(size) if size else b""

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        data = self._read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def _read(self, size: int) -> bytes:
        raise NotImplementedError


def _readinto_of(stream: Readable):
    """The stream's own readinto, when it has one: a read straight into the caller's buffer."""
    readinto = getattr(stream, "readinto", None)
    return readinto if callable(readinto) else None


class CountingReader(Reader):
    """Counts the compressed bytes a decoder consumes, for the bomb ratio."""

    def __init__(self, inner: Readable) -> None:
        self._inner = inner
        self.count = 0

    def _read(self, size: int) -> bytes:
        data = self._inner.read(size)
        self.count += len(data)
        return data

    def close(self) -> None:
        if not self.closed:
            self._inner.close()
        super().close()


class MeteredReader(Reader):
    """Where bytes become uncompressed: charges the total, and for a decoder checks the ratio and tags
    decoding errors with the compressed file's path."""

    def __init__(
        self,
        inner: Readable,
        budget: WalkBudget,
        path: str,
        high_water: HighWater,
        compressed: Callable[[], int] | None = None,
        also_close: Readable | None = None,
    ) -> None:
        self._inner = inner
        self._budget = budget
        self._path = path
        self._high_water = high_water
        self._compressed = compressed  # None for plain bytes: no ratio, and errors are the source's
        self._also_close = also_close
        self._position = 0

    def _read(self, size: int) -> bytes:
        data = self._guarded(self._inner.read, size)
        self._account(len(data))
        return data

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        """Straight into the caller's buffer (an 8 MB read is otherwise copied once more here)."""
        readinto = _readinto_of(self._inner)
        if readinto is None:
            return super().readinto(buffer)
        count = self._guarded(readinto, buffer) or 0
        self._account(count)
        return count

    def _guarded(self, read, argument):
        try:
            return read(argument)
        except PASS_THROUGH:
            raise
        except CORRUPT_ERRORS as err:
            if self._compressed is None:
                raise
            raise Corrupt(self._path, describe(err)) from err

    # A plain file can be moved through without reading it: the ingest does so over a log whose
    # records the log helper (app/ingest/log_prescan.py) read itself. Forward only, up to the file's end,
    # and every byte passed is charged as if it had been read.
    def seekable(self) -> bool:
        return self._compressed is None and getattr(self._inner, "seekable", lambda: False)()

    def tell(self) -> int:
        return self._position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        if not self.seekable() or whence not in (io.SEEK_SET, io.SEEK_CUR):
            raise io.UnsupportedOperation("seek")
        target = offset if whence == io.SEEK_SET else self._position + offset
        if target < self._position:
            raise io.UnsupportedOperation("a metered stream only moves forward")
        here = self._inner.tell()
        end = self._inner.seek(0, io.SEEK_END)
        step = max(0, min(target - self._position, end - here))
        self._inner.seek(here + step)
        self._account(step)
        return self._position

    def _account(self, count: int) -> None:
        self._position += count
        if self._position > self._high_water.value:
            expanded = self._compressed is not None
            self._budget.charge(self._position - self._high_water.value, self._path, expanded)
            self._high_water.value = self._position
        if self._compressed is not None and self._position > BOMB_FLOOR:
            packed = max(self._compressed(), 1)
            if self._position > self._budget.limits.max_ratio * packed:
                raise InputLimitExceeded(
                    f"archive {display_path(self._path)} looks like a decompression bomb: {fmt_bytes(self._position)} "
                    f"from {fmt_bytes(packed)} (ratio above {self._budget.limits.max_ratio}, max_ratio)"
                )

    def close(self) -> None:
        if not self.closed:
            with contextlib.ExitStack() as stack:
                if self._also_close is not None:
                    stack.callback(self._also_close.close)
                self._inner.close()
        super().close()


class ReplayStream:
    """A one-pass stream that can be re-opened from the start while little of it has been read.

    This is how we sniff magic bytes and still hand the whole stream on, without seeking. Only the
    newest view may be read; the head buffer is dropped once reading passes REPLAY_BYTES."""

    def __init__(self, factory: Callable[[], Readable], close_inner: bool = True) -> None:
        self._factory = factory
        self._close_inner = close_inner
        self._inner: Readable | None = None
        self._head: bytearray | None = bytearray()
        self._consumed = 0
        self._generation = 0

    def open_view(self) -> Readable:
        if self._head is None:
            raise io.UnsupportedOperation(
                f"a stream read from an archive can only be re-opened within its first {REPLAY_BYTES >> 10} KiB"
            )
        self._generation += 1
        return ReplayView(self, self._generation)

    def read_at(self, generation: int, position: int, size: int) -> bytes:
        if generation != self._generation:
            raise StaleStream("this stream was re-opened; read the newest one")
        if position < self._consumed:
            assert self._head is not None  # views only start at 0 while the head is kept
            return bytes(self._head[position : min(self._consumed, position + size)])
        if self._inner is None:
            self._inner = self._factory()
        if self._head is not None and self._consumed < REPLAY_BYTES:
            size = min(size, REPLAY_BYTES - self._consumed)  # so a buffered first read stays replayable
        data = self._inner.read(size)
        if self._head is not None:
            if self._consumed + len(data) <= REPLAY_BYTES:
                self._head += data
            else:
                self._head = None
        self._consumed += len(data)
        return data

    def close(self) -> None:
        if self._inner is not None and self._close_inner:
            self._inner.close()
        self._inner = None


class ReplayView(Reader):
    def __init__(self, replay: ReplayStream, generation: int) -> None:
        self._replay = replay
        self._generation = generation
        self._position = 0

    def _read(self, size: int) -> bytes:
        data = self._replay.read_at(self._generation, self._position, size)
        self._position += len(data)
        return data


class SeekingView(Reader):
    """An independent read position on a shared seekable upload (so sniffing and zip can seek)."""

    def __init__(self, stream: BinaryIO, start: int) -> None:
        self._stream = stream
        self._start = start
        self._position = 0

    def _read(self, size: int) -> bytes:
        self._stream.seek(self._start + self._position)
        data = self._stream.read(size)
        self._position += len(data)
        return data

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = os.SEEK_SET, /) -> int:
        if whence == os.SEEK_SET:
            self._position = offset
        elif whence == os.SEEK_CUR:
            self._position += offset
        else:
            self._position = self._stream.seek(0, os.SEEK_END) - self._start + offset
        if self._position < 0:
            raise ValueError("negative seek position")
        return self._position

    def tell(self) -> int:
        return self._position

    def close(self) -> None:
        super().close()  # the upload stays open: it belongs to the caller


class CallerReader(Reader):
    """What InputFile.open() hands out: corruption ends the stream early (recorded in ``skipped``)
    instead of raising into the caller's parser; stale use raises."""

    def __init__(self, inner: Readable, budget: WalkBudget, path: str, lease: Lease) -> None:
        self._inner = inner
        self._budget = budget
        self._path = path
        self._lease = lease
        self._failed = False

    def _read(self, size: int) -> bytes:
        return self._guarded(self._inner.read, size, b"")

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        readinto = _readinto_of(self._inner)
        if readinto is None:
            return super().readinto(buffer)
        return self._guarded(readinto, buffer, 0) or 0

    def seekable(self) -> bool:
        return getattr(self._inner, "seekable", lambda: False)()

    def tell(self) -> int:
        return self._inner.tell()

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        moved = self._guarded(lambda _: self._inner.seek(offset, whence), None, None)
        return self._inner.tell() if moved is None else moved  # a corrupt stream stays where it is

    def _guarded(self, read, argument, empty):
        if self._lease.expired:
            raise StaleStream(f"{display_path(self._path)}: read after the walker moved to the next file")
        if self._failed:
            return empty
        try:
            return read(argument)
        except Corrupt as err:
            self._failed = True
            self._budget.record_corrupt(err, reading=self._path)
            return empty

    def close(self) -> None:
        if not self.closed:
            self._inner.close()
        super().close()


def file_blob(path: str, display: str, size: int, follow: bool) -> Blob:
    opener = partial(_open_regular, path, follow)
    return Blob(display, size, opener, charged=False, seekable=opener, origin=path)


def _open_regular(path: str, follow: bool) -> BinaryIO:
    # O_NOFOLLOW: a file swapped for a symlink after the walk looked at it is still refused.
    # O_NONBLOCK: a file swapped for a fifo must not hang open(); fstat then refuses it.
    flags = os.O_RDONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_NONBLOCK", 0)
    if not follow:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    descriptor = os.open(path, flags)
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise OSError(f"{path}: not a regular file")
        return os.fdopen(descriptor, "rb")
    except BaseException:
        os.close(descriptor)
        raise


def read_exactly(stream: Readable, size: int) -> bytes:
    """Up to ``size`` bytes: raw streams may return short reads before the end."""
    parts: list[bytes] = []
    remaining = size
    while remaining > 0:
        chunk = stream.read(remaining)
        if not chunk:
            break
        parts.append(chunk)
        remaining -= len(chunk)
    return b"".join(parts)


def is_seekable(stream: BinaryIO) -> bool:
    try:
        if not stream.seekable():
            return False
        stream.tell()
        return True
    except (AttributeError, OSError, ValueError):
        return False
