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

Its parts: ``source_limits`` (limits, and what a walk used of them), ``source_names`` (formats by magic
bytes, safe member names), ``source_streams`` (the readers a byte goes through) and ``archives``
(tar and zip members). A new input kind starts in ``source_names.kind_of``; a new archive format in
``archives``.

This module is pure: no web, no database, and it must not import ``app``.
"""

from __future__ import annotations

import contextlib
import io
import os
import stat
from collections.abc import Iterable, Iterator
from functools import partial
from typing import BinaryIO, cast

from parsers.inputs.archives import ArchiveWalker
from parsers.inputs.source_limits import Corrupt, InputLimitExceeded, Limits, Skipped, WalkBudget
from parsers.inputs.source_names import (
    base_name,
    describe,
    display_path,
    folder_display,
    is_junk,
    kind_of,
    member_name,
    strip_suffix,
)
from parsers.inputs.source_streams import (
    CORRUPT_ERRORS,
    DECODERS,
    Blob,
    CallerReader,
    CountingReader,
    HighWater,
    InputFile,
    Lease,
    MeteredReader,
    Readable,
    ReplayStream,
    SeekingView,
    StaleStream,
    file_blob,
    is_seekable,
    read_exactly,
)

__all__ = ["InputFile", "InputLimitExceeded", "Limits", "Skipped", "SourceWalker"]

CHUNK = 64 << 10
SNIFF_BYTES = 512  # one tar header: enough for every magic number we recognise


# -- public API ----------------------------------------------------------------------------------------


class SourceWalker:
    """Walks inputs into ``InputFile``s. Use one walker per ingest: its limits count across all inputs.

    What counts against the limits, and how, is ``WalkBudget``'s.
    """

    def __init__(self, limits: Limits | None = None) -> None:
        self.budget = WalkBudget(limits or Limits())
        self.archives = ArchiveWalker(self.budget, self._visit)

    @property
    def limits(self) -> Limits:
        return self.budget.limits

    @property
    def skipped(self) -> list[Skipped]:
        return self.budget.skipped

    def walk(self, inputs: Iterable[str | os.PathLike[str] | tuple]) -> Iterator[InputFile]:
        """Yield every file in ``inputs``: paths (files or folders), or (display name, stream) pairs
        with, optionally, a third item: a path the stream's file can be opened by (its ``origin``)."""
        for source in inputs:
            if isinstance(source, tuple):
                name, stream, *origin = source
                yield from self._walk_upload(name, stream, origin[0] if origin else None)
            else:
                yield from self._walk_path(os.fsdecode(source))

    # -- inputs ----------------------------------------------------------------------------------------

    def _walk_path(self, path: str) -> Iterator[InputFile]:
        display = base_name(os.path.abspath(path)) or "input"
        try:
            # The path itself was chosen by the caller, so a symlink here is followed; links found
            # inside folders and archives are not.
            info = os.stat(path)
        except FileNotFoundError:
            self.budget.skip(display, f"{path} does not exist")
            return
        except OSError as err:
            self.budget.skip(display, f"unreadable: {err.strerror or err}")
            return
        if stat.S_ISDIR(info.st_mode):
            yield from self._walk_folder(path, display)
        elif stat.S_ISREG(info.st_mode):
            yield from self._visit(file_blob(path, display, info.st_size, follow=True), 0)
        else:
            self.budget.skip(display, "not a regular file (device, fifo or socket)")

    def _walk_folder(self, root: str, display: str) -> Iterator[InputFile]:
        def unreadable(err: OSError) -> None:
            self.budget.skip(
                folder_display(root, display, err.filename or root), f"unreadable: {err.strerror}"
            )

        for folder, subfolders, names in os.walk(root, onerror=unreadable, followlinks=False):
            prefix = folder_display(root, display, folder)
            keep = []
            for name in sorted(subfolders):
                if os.path.islink(os.path.join(folder, name)):
                    self.budget.skip(f"{prefix}/{name}", "symlink")
                elif is_junk(name, is_folder=True):
                    self.budget.skip(f"{prefix}/{name}", "macOS metadata")
                else:
                    keep.append(name)
            subfolders[:] = keep  # sorted in place, so os.walk descends in a deterministic order
            for name in sorted(names):
                full, shown = os.path.join(folder, name), f"{prefix}/{name}"
                if is_junk(name, is_folder=False):
                    self.budget.skip(shown, "macOS metadata")
                    continue
                try:
                    info = os.lstat(full)
                except OSError as err:
                    self.budget.skip(shown, f"unreadable: {err.strerror}")
                    continue
                if stat.S_ISLNK(info.st_mode):
                    self.budget.skip(shown, "symlink")
                elif not stat.S_ISREG(info.st_mode):
                    self.budget.skip(shown, "not a regular file (device, fifo or socket)")
                else:
                    yield from self._visit(file_blob(full, shown, info.st_size, follow=False), 0)

    def _walk_upload(self, name: str, stream: BinaryIO, origin: str | None = None) -> Iterator[InputFile]:
        # A browser's folder upload names each file by its relative path (cache/HASH/k.ttgir): keep
        # the path, which groups a cache folder's files; a name with ../ or a root keeps its base name.
        display, problem = member_name(name or "upload")
        if problem:
            display = base_name(name) or "upload"
        if is_seekable(stream):
            start = stream.tell()
            size = stream.seek(0, os.SEEK_END) - start
            stream.seek(start)
            opener = partial(SeekingView, stream, start)
            origin = origin if start == 0 else None  # a path opens the file at its start
            blob = Blob(display, size, opener, charged=False, seekable=opener, origin=origin)
            yield from self._visit(blob, 0)
            return
        # The upload belongs to the caller: read it once, never close it.
        with contextlib.closing(ReplayStream(lambda: stream, close_inner=False)) as replay:
            yield from self._visit(Blob(display, None, replay.open_view, charged=False), 0)

    # -- one file: plain, archive or compressed ------------------------------------------------------

    def _visit(self, blob: Blob, level: int) -> Iterator[InputFile]:
        """Yield ``blob`` as a file, or expand it if its magic bytes say archive. ``level`` counts the
        archives around it."""
        head = self._sniff(blob)
        if head is None:
            return
        kind = kind_of(head)
        if kind is None:
            yield from self._emit(blob)
            return
        if level >= self.limits.max_depth:
            self.budget.skip(
                blob.path, f"archive nested more than {self.limits.max_depth} levels deep (max_depth)"
            )
            return
        if kind == "zip":
            yield from self.archives.walk_zip(blob, level + 1)
        elif kind == "tar":
            yield from self.archives.walk_tar(
                blob.path, partial(self._metered_open, blob, HighWater()), level + 1
            )
        else:
            # One decoder feeds both the sniff and the walk, so nothing is decompressed twice.
            with contextlib.closing(ReplayStream(partial(self._decoder, blob, kind))) as replay:
                inner = Blob(strip_suffix(blob.path, kind), None, replay.open_view, charged=True)
                inner_head = self._sniff(inner)
                if inner_head is None:
                    return
                if kind_of(inner_head) == "tar":
                    # A .tar.gz is one archive: its members are named after "x.tar.gz", one level down.
                    yield from self.archives.walk_tar(blob.path, inner.open, level + 1)
                else:
                    yield from self._visit(inner, level + 1)

    def _sniff(self, blob: Blob) -> bytes | None:
        """The first bytes of ``blob``, or None (recorded in ``skipped``) when they cannot be read."""
        try:
            with contextlib.closing(blob.open()) as stream:
                return read_exactly(stream, SNIFF_BYTES)
        except Corrupt as err:
            self.budget.record_corrupt(err)
        except OSError as err:  # untagged: the raw file or upload itself
            self.budget.skip(blob.path, f"unreadable: {err.strerror or err}")
        except CORRUPT_ERRORS as err:
            self.budget.record_corrupt(Corrupt(blob.path, describe(err)))
        return None

    def _emit(self, blob: Blob) -> Iterator[InputFile]:
        self.budget.count_entry(blob.path)
        lease = Lease()
        try:
            yield InputFile(
                display_path(blob.path), blob.size, partial(self._open_for_caller, blob, HighWater(), lease),
                blob.origin,
            )
        finally:
            lease.expire()  # an archive member's stream is gone once the walker moves on

    def _open_for_caller(self, blob: Blob, high_water: HighWater, lease: Lease) -> BinaryIO:
        if lease.expired:
            raise StaleStream(
                f"{display_path(blob.path)}: open() called after the walker moved to the next file"
            )
        try:
            source = self._metered_open(blob, high_water)
        except Corrupt as err:  # sniffing worked but opening again did not: an empty file, recorded
            self.budget.record_corrupt(err, reading=blob.path)
            source = io.BytesIO()
        raw = CallerReader(source, self.budget, blob.path, lease)
        stream = io.BufferedReader(raw, CHUNK)
        lease.streams.append(stream)
        return cast(BinaryIO, stream)

    def _metered_open(self, blob: Blob, high_water: HighWater) -> Readable:
        """Open ``blob``; its bytes count against the total unless an enclosing layer counted them."""
        stream = blob.open()
        return stream if blob.charged else MeteredReader(stream, self.budget, blob.path, high_water)

    def _decoder(self, blob: Blob, kind: str) -> Readable:
        compressed = CountingReader(blob.open())
        try:
            decoder = DECODERS[kind](compressed)
        except CORRUPT_ERRORS as err:
            compressed.close()
            raise Corrupt(blob.path, describe(err)) from err
        return MeteredReader(
            decoder,
            self.budget,
            blob.path,
            HighWater(),
            compressed=lambda: compressed.count,
            also_close=compressed,
        )
