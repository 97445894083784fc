"""Turn user inputs (paths, folders, uploads) into a stream of files, safely.

Uploads are hostile: archives may hold path traversal, links, devices, decompression bombs, or be cut
short. Everything is streamed, so memory stays flat however large the input:

- formats are recognised by magic bytes, not by name: zip, tar, gzip, xz, zstd, bzip2, and any
  nesting of them (a zip holding a tar.xz holding a log) up to ``Limits.max_depth``;
- tar archives (compressed or not) are read in stream mode, member by member, in archive order;
- zip needs random access, so a zip that is not a seekable file is spooled to a bounded temp file;
- every decompressed byte goes through a metering reader that enforces the total-size and
  compression-ratio limits, raising ``InputLimitExceeded``;
- a corrupt or truncated archive ends that archive only: it is recorded in ``SourceWalker.skipped``
  and the walk goes on with the next input.

This module is pure: no web, no database, and it must not import ``app``.
"""

from __future__ import annotations

import bz2
import contextlib
import gzip
import io
import lzma
import os
import re
import stat
import struct
import tarfile
import tempfile
import time
import zipfile
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import partial
from typing import BinaryIO, Protocol, cast

import zstandard

__all__ = ["InputFile", "InputLimitExceeded", "Limits", "Skipped", "SourceWalker"]

CHUNK = 64 << 10
SNIFF_BYTES = 512  # one tar header: enough for every magic number we recognise
REPLAY_BYTES = 256 << 10  # a one-pass stream may be re-opened until this much of it was read
BOMB_FLOOR = 64 << 20  # the ratio test starts here: small files can legitimately compress absurdly well
SPOOL_MEMORY = 16 << 20  # a zip spooled for seeking stays in memory up to this size, then goes to disk
CENTRAL_DIRECTORY_BYTES_PER_FILE = 1024  # zipfile reads the whole central directory into memory
TAR_HEADER_DATA_BYTES = 1 << 20  # tarfile reads long-name and pax headers whole into memory


# -- public API ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class InputFile:
    """One file found in the inputs. ``open()`` is valid only until the walker moves on."""

    path: str  # display path, '/'-separated: "run.tar.xz/run/dump.log", "folder/src/k.py", "dump.log"
    size: int | None  # uncompressed size when known
    _opener: Callable[[], BinaryIO] = field(repr=False, compare=False)

    def open(self) -> BinaryIO:
        """A fresh binary stream from the start of the file; read it sequentially.

        Files inside archives are read straight from the archive stream, so a second ``open()`` works
        only while the earlier stream has read less than 256 KiB (enough to sniff a header first).
        A stream whose archive turns out to be corrupt ends early; the walker records it in ``skipped``.
        """
        return self._opener()


@dataclass(frozen=True)
class Skipped:
    path: str
    reason: str  # human readable: "symlink", "path traversal (../..)", "corrupt archive: ...", ...


class InputLimitExceeded(Exception):
    """The inputs are too big, too many, too compressed or too slow to read. The message names the limit."""


@dataclass(frozen=True)
class Limits:
    max_total_bytes: int = 4 << 30  # total uncompressed bytes across all inputs
    max_files: int = 100_000  # files yielded plus entries skipped
    max_ratio: int = 1000  # uncompressed/compressed ratio of a bomb (enforced once output > 64 MB)
    max_depth: int = 3  # nesting of archives inside archives
    # Wall-clock seconds for one walk (the app's ingest_timeout_seconds); None: no limit. Checked
    # cooperatively, each time bytes are read or a file is counted, so a slow parse between two reads
    # overruns it by that parse's time at most.
    timeout_seconds: float | None = None


class SourceWalker:
    """Walks inputs into ``InputFile``s. Use one walker per ingest: its limits count across all inputs.

    Bytes count once against ``max_total_bytes`` where they become uncompressed: the output of each
    decompressor, and the bytes of plain files and plain tars read from disk or an upload. So the
    compressed bytes of a nested archive (a .tar.xz inside a .tar) count twice, which is small.
    """

    def __init__(self, limits: Limits = Limits()) -> None:
        self.limits = limits
        self.skipped: list[Skipped] = []
        self._total_bytes = 0
        self._entries = 0
        self._broken: set[str] = set()  # archives whose stream failed: stop walking them
        self._started = time.monotonic()
        timeout = limits.timeout_seconds
        self._deadline = self._started + timeout if timeout else None

    def walk(self, inputs: Iterable[str | os.PathLike[str] | tuple[str, BinaryIO]]) -> Iterator[InputFile]:
        """Yield every file in ``inputs``: paths (files or folders) or (display name, stream) pairs."""
        for source in inputs:
            if isinstance(source, tuple):
                name, stream = source
                yield from self._walk_upload(name, stream)
            else:
                yield from self._walk_path(os.fsdecode(source))

    # -- inputs ----------------------------------------------------------------------------------------

    def _walk_path(self, path: str) -> Iterator[InputFile]:
        display = _base_name(os.path.abspath(path)) or "input"
        try:
            # The path itself was chosen by the caller, so a symlink here is followed; links found
            # inside folders and archives are not.
            info = os.stat(path)
        except FileNotFoundError:
            self._skip(display, f"{path} does not exist")
            return
        except OSError as err:
            self._skip(display, f"unreadable: {err.strerror or err}")
            return
        if stat.S_ISDIR(info.st_mode):
            yield from self._walk_folder(path, display)
        elif stat.S_ISREG(info.st_mode):
            yield from self._visit(_file_blob(path, display, info.st_size, follow=True), 0)
        else:
            self._skip(display, "not a regular file (device, fifo or socket)")

    def _walk_folder(self, root: str, display: str) -> Iterator[InputFile]:
        def unreadable(err: OSError) -> None:
            self._skip(_folder_display(root, display, err.filename or root), f"unreadable: {err.strerror}")

        for folder, subfolders, names in os.walk(root, onerror=unreadable, followlinks=False):
            prefix = _folder_display(root, display, folder)
            keep = []
            for name in sorted(subfolders):
                if os.path.islink(os.path.join(folder, name)):
                    self._skip(f"{prefix}/{name}", "symlink")
                elif _is_junk(name, is_folder=True):
                    self._skip(f"{prefix}/{name}", "macOS metadata")
                else:
                    keep.append(name)
            subfolders[:] = keep  # sorted in place, so os.walk descends in a deterministic order
            for name in sorted(names):
                full, shown = os.path.join(folder, name), f"{prefix}/{name}"
                if _is_junk(name, is_folder=False):
                    self._skip(shown, "macOS metadata")
                    continue
                try:
                    info = os.lstat(full)
                except OSError as err:
                    self._skip(shown, f"unreadable: {err.strerror}")
                    continue
                if stat.S_ISLNK(info.st_mode):
                    self._skip(shown, "symlink")
                elif not stat.S_ISREG(info.st_mode):
                    self._skip(shown, "not a regular file (device, fifo or socket)")
                else:
                    yield from self._visit(_file_blob(full, shown, info.st_size, follow=False), 0)

    def _walk_upload(self, name: str, stream: BinaryIO) -> Iterator[InputFile]:
        # A browser's folder upload names each file by its relative path (cache/HASH/k.ttgir): keep
        # the path, which groups a cache folder's files; a name with ../ or a root keeps its base name.
        display, problem = _member_name(name or "upload")
        if problem:
            display = _base_name(name) or "upload"
        if _is_seekable(stream):
            start = stream.tell()
            size = stream.seek(0, os.SEEK_END) - start
            stream.seek(start)
            opener = partial(_SeekingView, stream, start)
            yield from self._visit(_Blob(display, size, opener, charged=False, seekable=opener), 0)
            return
        # The upload belongs to the caller: read it once, never close it.
        with contextlib.closing(_ReplayStream(lambda: stream, close_inner=False)) as replay:
            yield from self._visit(_Blob(display, None, replay.open_view, charged=False), 0)

    # -- one file: plain, archive or compressed ------------------------------------------------------

    def _visit(self, blob: _Blob, level: int) -> Iterator[InputFile]:
        """Yield ``blob`` as a file, or expand it if its magic bytes say archive. ``level`` counts the
        archives around it."""
        head = self._sniff(blob)
        if head is None:
            return
        kind = _kind_of(head)
        if kind is None:
            yield from self._emit(blob)
            return
        if level >= self.limits.max_depth:
            self._skip(blob.path, f"archive nested more than {self.limits.max_depth} levels deep (max_depth)")
            return
        if kind == "zip":
            yield from self._walk_zip(blob, level + 1)
        elif kind == "tar":
            yield from self._walk_tar(blob.path, partial(self._metered_open, blob, _HighWater()), level + 1)
        else:
            # One decoder feeds both the sniff and the walk, so nothing is decompressed twice.
            with contextlib.closing(_ReplayStream(partial(self._decoder, blob, kind))) as replay:
                inner = _Blob(_strip_suffix(blob.path, kind), None, replay.open_view, charged=True)
                inner_head = self._sniff(inner)
                if inner_head is None:
                    return
                if _kind_of(inner_head) == "tar":
                    # A .tar.gz is one archive: its members are named after "x.tar.gz", one level down.
                    yield from self._walk_tar(blob.path, inner.open, level + 1)
                else:
                    yield from self._visit(inner, level + 1)

    def _sniff(self, blob: _Blob) -> bytes | None:
        """The first bytes of ``blob``, or None (recorded in ``skipped``) when they cannot be read."""
        try:
            with contextlib.closing(blob.open()) as stream:
                return _read_exactly(stream, SNIFF_BYTES)
        except _Corrupt as err:
            self._record_corrupt(err)
        except OSError as err:  # untagged: the raw file or upload itself
            self._skip(blob.path, f"unreadable: {err.strerror or err}")
        except _CORRUPT_ERRORS as err:
            self._record_corrupt(_Corrupt(blob.path, _describe(err)))
        return None

    def _emit(self, blob: _Blob) -> Iterator[InputFile]:
        self._count_entry(blob.path)
        lease = _Lease()
        try:
            yield InputFile(
                _display(blob.path), blob.size, partial(self._open_for_caller, blob, _HighWater(), lease)
            )
        finally:
            lease.expire()  # an archive member's stream is gone once the walker moves on

    def _open_for_caller(self, blob: _Blob, high_water: _HighWater, lease: _Lease) -> BinaryIO:
        if lease.expired:
            raise _StaleStream(
                f"{_display(blob.path)}: open() called after the walker moved to the next file"
            )
        try:
            source = self._metered_open(blob, high_water)
        except _Corrupt as err:  # sniffing worked but opening again did not: an empty file, recorded
            self._record_corrupt(err, reading=blob.path)
            source = io.BytesIO()
        raw = _CallerReader(source, self, blob.path, lease)
        stream = io.BufferedReader(raw, CHUNK)
        lease.streams.append(stream)
        return cast(BinaryIO, stream)

    def _metered_open(self, blob: _Blob, high_water: _HighWater) -> _Readable:
        """Open ``blob``; its bytes count against the total unless an enclosing layer counted them."""
        stream = blob.open()
        return stream if blob.charged else _MeteredReader(stream, self, blob.path, high_water)

    def _decoder(self, blob: _Blob, kind: str) -> _Readable:
        compressed = _CountingReader(blob.open())
        try:
            decoder = _DECODERS[kind](compressed)
        except _CORRUPT_ERRORS as err:
            compressed.close()
            raise _Corrupt(blob.path, _describe(err)) from err
        return _MeteredReader(
            decoder, self, blob.path, _HighWater(), compressed=lambda: compressed.count, also_close=compressed
        )

    # -- tar: streamed, member by member ---------------------------------------------------------------

    def _walk_tar(
        self, archive: str, open_source: Callable[[], _Readable], level: int
    ) -> Iterator[InputFile]:
        with contextlib.ExitStack() as stack:
            try:
                source = stack.enter_context(contextlib.closing(open_source()))
                tar = stack.enter_context(
                    tarfile.open(fileobj=cast(BinaryIO, source), mode="r|", tarinfo=_BoundedTarInfo)
                )
            except _Corrupt as err:
                self._record_corrupt(err)
                return
            except _CORRUPT_ERRORS as err:
                self._record_corrupt(_Corrupt(archive, _describe(err)))
                return
            while archive not in self._broken:
                try:
                    member = tar.next()
                except _Corrupt as err:
                    self._record_corrupt(err)
                    return
                except _CORRUPT_ERRORS as err:
                    self._record_corrupt(_Corrupt(archive, _describe(err)))
                    return
                if member is None:
                    # Stream mode takes a clean EOF at a header boundary for the end, but a complete tar
                    # ends with a zero block: without one the archive was cut short.
                    assert tar.fileobj is not None
                    if tar.fileobj.tell() < tar.offset + tarfile.BLOCKSIZE:
                        self._record_corrupt(_Corrupt(archive, "truncated: no end-of-archive marker"))
                    return
                tar.members.clear()  # stream mode would otherwise keep every TarInfo in memory
                yield from self._tar_member(tar, member, archive, level)

    def _tar_member(
        self, tar: tarfile.TarFile, member: tarfile.TarInfo, archive: str, level: int
    ) -> Iterator[InputFile]:
        if member.isdir():
            return
        name, problem = _member_name(member.name)
        path = f"{archive}/{name}"
        if problem:
            self._skip(path, problem)
        elif _is_junk(name, is_folder=False):
            self._skip(path, "macOS metadata")
        elif member.issym():
            self._skip(path, "symlink")
        elif member.islnk():
            self._skip(path, "hardlink")
        elif member.ischr() or member.isblk() or member.isfifo():
            self._skip(path, "device or fifo")
        elif not member.isreg():
            self._skip(path, "unsupported archive member type")
        elif member.sparse is not None:
            self._skip(path, "unsupported archive member type (sparse file)")
        else:
            reader = _TarMemberReader(tar, member, archive)
            with contextlib.closing(_ReplayStream(lambda: reader)) as replay:
                yield from self._visit(_Blob(path, member.size, replay.open_view, charged=True), level)

    # -- zip: needs a seekable file ------------------------------------------------------------------

    def _walk_zip(self, blob: _Blob, level: int) -> Iterator[InputFile]:
        with contextlib.ExitStack() as stack:
            try:
                archive = self._seekable_copy(blob, stack)
                archive_size = archive.seek(0, os.SEEK_END)
                self._check_zip_directory(blob.path, archive)
                zip_file = stack.enter_context(zipfile.ZipFile(archive))
            except _Corrupt as err:
                self._record_corrupt(err)
                return
            except _CORRUPT_ERRORS as err:
                self._record_corrupt(_Corrupt(blob.path, _describe(err)))
                return
            members = zip_file.infolist()
            declared = sum(member.file_size for member in members)
            if declared > BOMB_FLOOR and declared > self.limits.max_ratio * max(archive_size, 1):
                raise InputLimitExceeded(
                    f"archive {_display(blob.path)} looks like a decompression bomb: it declares {_fmt(declared)} "
                    f"from {_fmt(archive_size)} (ratio above {self.limits.max_ratio}, max_ratio)"
                )
            for member in members:
                yield from self._zip_member(zip_file, member, blob.path, level)

    def _zip_member(
        self, zip_file: zipfile.ZipFile, member: zipfile.ZipInfo, archive: str, level: int
    ) -> Iterator[InputFile]:
        mode = member.external_attr >> 16 if member.create_system == 3 else 0  # unix mode bits
        if member.is_dir() or stat.S_ISDIR(mode):
            return
        name, problem = _member_name(member.filename)
        path = f"{archive}/{name}"
        if problem:
            self._skip(path, problem)
        elif _is_junk(name, is_folder=False):
            self._skip(path, "macOS metadata")
        elif stat.S_ISLNK(mode):
            self._skip(path, "symlink")
        elif stat.S_IFMT(mode) and not stat.S_ISREG(mode):
            self._skip(path, "unsupported archive member type")
        elif member.flag_bits & 0x1:
            self._skip(path, "encrypted zip member")
        elif member.compress_type not in _ZIP_METHODS:
            self._skip(path, f"unsupported zip compression method {member.compress_type}")
        else:
            opener = partial(self._open_zip_member, zip_file, member, path, _HighWater())
            yield from self._visit(_Blob(path, member.file_size, opener, charged=True), level)

    def _open_zip_member(
        self, zip_file: zipfile.ZipFile, member: zipfile.ZipInfo, path: str, high_water: _HighWater
    ) -> _Readable:
        try:
            stream = zip_file.open(member)
        except _CORRUPT_ERRORS as err:
            raise _Corrupt(path, _describe(err)) from err
        # ZipExtFile never reads past compress_size, so that is an honest denominator for the ratio.
        return _MeteredReader(stream, self, path, high_water, compressed=lambda: member.compress_size)

    def _seekable_copy(self, blob: _Blob, stack: contextlib.ExitStack) -> BinaryIO:
        if blob.seekable is not None:
            return cast(BinaryIO, stack.enter_context(contextlib.closing(blob.seekable())))
        spool = stack.enter_context(tempfile.SpooledTemporaryFile(max_size=SPOOL_MEMORY))  # noqa: SIM115
        with contextlib.closing(blob.open()) as source:
            copied = 0
            while chunk := source.read(CHUNK):
                copied += len(chunk)
                if copied > self.limits.max_total_bytes:
                    raise InputLimitExceeded(
                        f"archive {_display(blob.path)} is larger than the "
                        f"{_fmt(self.limits.max_total_bytes)} limit (max_total_bytes)"
                    )
                spool.write(chunk)
        spool.seek(0)
        return cast(BinaryIO, spool)

    def _check_zip_directory(self, path: str, archive: BinaryIO) -> None:
        """Refuse a zip whose central directory is too big before zipfile loads all of it into memory."""
        find_end_record = getattr(zipfile, "_EndRecData", None)  # private, but stable since Python 2
        if find_end_record is None:
            return
        end_record = find_end_record(archive)
        if not end_record:
            return  # not our job: ZipFile will raise BadZipFile
        entries, directory_size = end_record[zipfile._ECD_ENTRIES_TOTAL], end_record[zipfile._ECD_SIZE]
        if entries > self.limits.max_files:
            raise InputLimitExceeded(
                f"archive {_display(path)} holds {entries} entries, more than the {self.limits.max_files} "
                f"file limit (max_files)"
            )
        if directory_size > max(self.limits.max_files, 1) * CENTRAL_DIRECTORY_BYTES_PER_FILE:
            raise InputLimitExceeded(
                f"archive {_display(path)} has a {_fmt(directory_size)} central directory, too big for "
                f"{self.limits.max_files} files (max_files)"
            )

    # -- bookkeeping ---------------------------------------------------------------------------------

    def _skip(self, path: str, reason: str) -> None:
        self._count_entry(path)
        self.skipped.append(Skipped(_display(path), reason))

    def _record_corrupt(self, err: _Corrupt, reading: str | None = None) -> None:
        if err.path in self._broken:
            return
        self._broken.add(err.path)
        detail = err.detail if reading in (None, err.path) else f"{err.detail} (in {_display(reading)})"
        self._skip(err.path, f"corrupt archive: {detail}")

    def _count_entry(self, path: str) -> None:
        # Skipped entries count too: an archive of a million symlinks must not grow `skipped` forever.
        self._entries += 1
        self._check_deadline(path)
        if self._entries > self.limits.max_files:
            raise InputLimitExceeded(f"more than {self.limits.max_files} files in the inputs (max_files)")

    def _check_deadline(self, path: str | None = None) -> None:
        if self._deadline is not None and time.monotonic() > self._deadline:
            where = f" at {_display(path)}" if path else ""
            raise InputLimitExceeded(
                f"the ingest took longer than the {self.limits.timeout_seconds:g} s limit{where} "
                f"(ingest_timeout_seconds)"
            )

    def _charge(self, count: int, path: str, expanded: bool) -> None:
        self._check_deadline(path)
        self._total_bytes += count
        limit = self.limits.max_total_bytes
        if self._total_bytes > limit:
            if expanded:
                raise InputLimitExceeded(
                    f"archive {_display(path)} expands beyond the {_fmt(limit)} limit (max_total_bytes)"
                )
            raise InputLimitExceeded(
                f"the inputs exceed the {_fmt(limit)} limit (max_total_bytes) at {_display(path)}"
            )


# -- internals: the layers a byte goes through ---------------------------------------------------------


class _Readable(Protocol):
    def read(self, size: int = -1, /) -> bytes: ...

    def close(self) -> None: ...


@dataclass
class _Blob:
    """A file-like thing before we know what it is: plain file, archive or compressed stream."""

    path: str  # internal display path (may hold surrogates; cleaned by _display)
    size: int | None
    open: Callable[[], _Readable]  # a stream from the start; one-pass sources replay a short head
    charged: bool  # its bytes were already counted against max_total_bytes by an enclosing layer
    seekable: Callable[[], BinaryIO] | None = None  # real random access (for zip) when we have it


@dataclass
class _HighWater:
    """How far any stream of one file has been read: re-reading the same bytes is not charged again."""

    value: int = 0


@dataclass
class _Lease:
    """The streams handed out for the current InputFile, closed when the walker moves on."""

    expired: bool = False
    streams: list[io.BufferedReader] = field(default_factory=list)

    def expire(self) -> None:
        self.expired = True
        for stream in self.streams:
            with contextlib.suppress(Exception):
                stream.close()
        self.streams.clear()


class _Corrupt(Exception):
    """Bad data, tagged with the archive (or compressed file) it came from."""

    def __init__(self, path: str, detail: str) -> None:
        super().__init__(f"{path}: {detail}")
        self.path = path
        self.detail = detail


class _StaleStream(ValueError):
    """A stream used after the walker moved past its file."""


# Errors that the decoders, tarfile and zipfile raise on bad data.
_CORRUPT_ERRORS: tuple[type[BaseException], ...] = (
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
_PASS_THROUGH: tuple[type[BaseException], ...] = (_Corrupt, InputLimitExceeded, _StaleStream)

# The decoded stream is closed by its _MeteredReader, not by a with block.
_DECODERS: dict[str, Callable[[_Readable], _Readable]] = {
    "gz": lambda raw: gzip.GzipFile(fileobj=cast(BinaryIO, raw), mode="rb"),
    "xz": lambda raw: lzma.LZMAFile(cast(BinaryIO, raw)),  # noqa: SIM115
    "bz2": lambda raw: bz2.BZ2File(cast(BinaryIO, raw)),
    "zst": lambda raw: zstandard.ZstdDecompressor().stream_reader(
        raw, read_across_frames=True, closefd=False
    ),
}
_SUFFIXES = {"gz": (".gz", ".gzip"), "xz": (".xz", ".lzma"), "bz2": (".bz2",), "zst": (".zst", ".zstd")}
_ZIP_METHODS = {zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA}


class _Reader(io.RawIOBase):
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


class _CountingReader(_Reader):
    """Counts the compressed bytes a decoder consumes, for the bomb ratio."""

    def __init__(self, inner: _Readable) -> None:
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


class _MeteredReader(_Reader):
    """Where bytes become uncompressed: charges the total, and for a decoder checks the ratio and tags
    decoding errors with the compressed file's path."""

    def __init__(
        self,
        inner: _Readable,
        walker: SourceWalker,
        path: str,
        high_water: _HighWater,
        compressed: Callable[[], int] | None = None,
        also_close: _Readable | None = None,
    ) -> None:
        self._inner = inner
        self._walker = walker
        self._path = path
        self._high_water = high_water
        self._compressed = compressed  # None for plain bytes: no ratio, and errors are the source's
        self._also_close = also_close
        self._position = 0

    def _read(self, size: int) -> bytes:
        try:
            data = self._inner.read(size)
        except _PASS_THROUGH:
            raise
        except _CORRUPT_ERRORS as err:
            if self._compressed is None:
                raise
            raise _Corrupt(self._path, _describe(err)) from err
        self._position += len(data)
        if self._position > self._high_water.value:
            expanded = self._compressed is not None
            self._walker._charge(self._position - self._high_water.value, self._path, expanded)
            self._high_water.value = self._position
        if self._compressed is not None and self._position > BOMB_FLOOR:
            packed = max(self._compressed(), 1)
            if self._position > self._walker.limits.max_ratio * packed:
                raise InputLimitExceeded(
                    f"archive {_display(self._path)} looks like a decompression bomb: {_fmt(self._position)} "
                    f"from {_fmt(packed)} (ratio above {self._walker.limits.max_ratio}, max_ratio)"
                )
        return data

    def close(self) -> None:
        if not self.closed:
            with contextlib.ExitStack() as stack:
                if self._also_close is not None:
                    stack.callback(self._also_close.close)
                self._inner.close()
        super().close()


class _ReplayStream:
    """A one-pass stream that can be re-opened from the start while little of it has been read.

    This is how we sniff magic bytes and still hand the whole stream on, without seeking. Only the
    newest view may be read; the head buffer is dropped once reading passes REPLAY_BYTES."""

    def __init__(self, factory: Callable[[], _Readable], close_inner: bool = True) -> None:
        self._factory = factory
        self._close_inner = close_inner
        self._inner: _Readable | None = None
        self._head: bytearray | None = bytearray()
        self._consumed = 0
        self._generation = 0

    def open_view(self) -> _Readable:
        if self._head is None:
            raise io.UnsupportedOperation(
                f"a stream read from an archive can only be re-opened within its first {REPLAY_BYTES >> 10} KiB"
            )
        self._generation += 1
        return _ReplayView(self, self._generation)

    def read_at(self, generation: int, position: int, size: int) -> bytes:
        if generation != self._generation:
            raise _StaleStream("this stream was re-opened; read the newest one")
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


class _ReplayView(_Reader):
    def __init__(self, replay: _ReplayStream, generation: int) -> None:
        self._replay = replay
        self._generation = generation
        self._position = 0

    def _read(self, size: int) -> bytes:
        data = self._replay.read_at(self._generation, self._position, size)
        self._position += len(data)
        return data


class _SeekingView(_Reader):
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


class _BoundedTarInfo(tarfile.TarInfo):
    """Refuses absurd long-name and pax headers before tarfile reads them whole into memory."""

    def _proc_member(self, tar: tarfile.TarFile) -> tarfile.TarInfo:  # type: ignore[override]
        if self.type in _TAR_HEADER_DATA_TYPES and self.size > TAR_HEADER_DATA_BYTES:
            raise tarfile.ReadError(
                f"{_fmt(self.size)} extended header (limit {_fmt(TAR_HEADER_DATA_BYTES)})"
            )
        return super()._proc_member(tar)  # type: ignore[misc]


_TAR_HEADER_DATA_TYPES = {
    tarfile.GNUTYPE_LONGNAME,
    tarfile.GNUTYPE_LONGLINK,
    tarfile.XHDTYPE,
    tarfile.XGLTYPE,
    tarfile.SOLARIS_XHDTYPE,
}


class _TarMemberReader(_Reader):
    """A tar member's data, read straight from the archive stream (stream mode cannot go back)."""

    def __init__(self, tar: tarfile.TarFile, member: tarfile.TarInfo, archive: str) -> None:
        assert tar.fileobj is not None
        self._stream = tar.fileobj
        self._archive = archive
        self._expected = member.offset_data
        self._left = member.size

    def _read(self, size: int) -> bytes:
        if self._left <= 0:
            return b""
        if self._stream.tell() != self._expected:
            raise _StaleStream("the tar stream has moved past this member")
        try:
            data = self._stream.read(min(size, self._left))
        except _PASS_THROUGH:
            raise
        except _CORRUPT_ERRORS as err:
            raise _Corrupt(self._archive, _describe(err)) from err
        if not data:
            raise _Corrupt(self._archive, "truncated: unexpected end of data")
        self._left -= len(data)
        self._expected += len(data)
        return data


class _CallerReader(_Reader):
    """What InputFile.open() hands out: corruption ends the stream early (recorded in ``skipped``)
    instead of raising into the caller's parser; stale use raises."""

    def __init__(self, inner: _Readable, walker: SourceWalker, path: str, lease: _Lease) -> None:
        self._inner = inner
        self._walker = walker
        self._path = path
        self._lease = lease
        self._failed = False

    def _read(self, size: int) -> bytes:
        if self._lease.expired:
            raise _StaleStream(f"{_display(self._path)}: read after the walker moved to the next file")
        if self._failed:
            return b""
        try:
            return self._inner.read(size)
        except _Corrupt as err:
            self._failed = True
            self._walker._record_corrupt(err, reading=self._path)
            return b""

    def close(self) -> None:
        if not self.closed:
            self._inner.close()
        super().close()


# -- helpers -------------------------------------------------------------------------------------------


def _file_blob(path: str, display: str, size: int, follow: bool) -> _Blob:
    opener = partial(_open_regular, path, follow)
    return _Blob(display, size, opener, charged=False, seekable=opener)


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


def _read_exactly(stream: _Readable, size: int) -> bytes:
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


_BZIP2_MAGIC = re.compile(rb"BZh[1-9](1AY&SY|\x17rE8P\x90)")  # a first block, or an empty stream


def _kind_of(head: bytes) -> str | None:
    """Archive or compression format from the first bytes; None for anything else."""
    if head.startswith(b"\x1f\x8b\x08"):
        return "gz"
    if head.startswith(b"\xfd7zXZ\x00"):
        return "xz"
    if head.startswith(b"\x28\xb5\x2f\xfd"):
        return "zst"
    if _BZIP2_MAGIC.match(head):
        return "bz2"
    if head.startswith((b"PK\x03\x04", b"PK\x05\x06")):
        return "zip"
    if _is_tar_header(head):
        return "tar"
    return None


def _is_tar_header(head: bytes) -> bool:
    if len(head) < tarfile.BLOCKSIZE:
        return False
    if head[257:262] == b"ustar":  # POSIX and GNU
        return True
    # Pre-POSIX (v7) tar has no magic; accept a header whose checksum adds up.
    try:
        stored = int(head[148:156].replace(b"\0", b" ").strip() or b"-1", 8)
    except ValueError:
        return False
    return head[0] != 0 and stored == sum(head[:148]) + 8 * 0x20 + sum(head[156:512])


def _member_name(name: str) -> tuple[str, str | None]:
    """A member's clean relative path, and why it must be skipped (None if it is fine)."""
    name = name.replace("\\", "/")  # zips made on Windows; also defeats "..\\" traversal
    if name.startswith("/") or re.match(r"[A-Za-z]:", name):
        return name.lstrip("/"), "absolute path"
    parts = [part for part in name.split("/") if part not in ("", ".")]
    if ".." in parts:
        return name, "path traversal (../..)"
    if not parts:
        return name, "empty member name"
    return "/".join(parts), None


def _is_junk(name: str, is_folder: bool) -> bool:
    """macOS metadata: __MACOSX folders, .DS_Store, and AppleDouble "._name" files."""
    parts = name.split("/")
    if "__MACOSX" in parts:
        return True
    return not is_folder and (parts[-1] == ".DS_Store" or parts[-1].startswith("._"))


def _strip_suffix(path: str, kind: str) -> str:
    for suffix in _SUFFIXES[kind]:
        if path.lower().endswith(suffix) and len(path) > len(suffix) and path[-len(suffix) - 1] != "/":
            return path[: -len(suffix)]
    return path


def _base_name(name: str) -> str:
    return name.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]


def _folder_display(root: str, display: str, folder: str) -> str:
    relative = os.path.relpath(folder, root)
    return display if relative == "." else f"{display}/{relative.replace(os.sep, '/')}"


_CONTROL_CHARACTERS = re.compile(r"[\x00-\x1f\x7f]")


def _display(path: str) -> str:
    """A path fit to show and store: undecodable bytes and control characters replaced."""
    text = path.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    return _CONTROL_CHARACTERS.sub("?", text)


def _is_seekable(stream: BinaryIO) -> bool:
    try:
        if not stream.seekable():
            return False
        stream.tell()
        return True
    except (AttributeError, OSError, ValueError):
        return False


def _describe(err: BaseException) -> str:
    text = str(err) or type(err).__name__
    return f"truncated ({text})" if isinstance(err, EOFError) else text


def _fmt(count: int) -> str:
    for unit, shift in (("GB", 30), ("MB", 20), ("KB", 10)):
        if count >= 1 << shift:
            return f"{count / (1 << shift):.1f} {unit}"
    return f"{count} bytes"
