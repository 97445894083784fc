"""Archives inside the inputs: tar streamed member by member, zip through a seekable copy. Each member
goes back to the walker (``visit``), which emits it as a file or expands it if it is an archive too.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tarfile
import tempfile
import zipfile
from collections.abc import Callable, Iterator
from functools import partial
from typing import BinaryIO, cast

from parsers.inputs.source_limits import Corrupt, InputLimitExceeded, WalkBudget
from parsers.inputs.source_names import describe, display_path, fmt_bytes, is_junk, member_name
from parsers.inputs.source_streams import (
    CORRUPT_ERRORS,
    PASS_THROUGH,
    Blob,
    HighWater,
    InputFile,
    MeteredReader,
    Readable,
    Reader,
    ReplayStream,
    StaleStream,
)

CHUNK = 64 << 10
SPOOL_MEMORY = 16 << 20  # a zip spooled for seeking stays in memory up to this size, then goes to disk
CENTRAL_DIRECTORY_BYTES_PER_FILE = 1024  # zipfile reads the whole central directory into memory
TAR_HEADER_DATA_BYTES = 1 << 20  # tarfile reads long-name and pax headers whole into memory
BOMB_FLOOR = 64 << 20  # the declared-size test starts here, as the streamed one does
ZIP_METHODS = {zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA}


class ArchiveWalker:
    """Walks the members of tar and zip archives for one walk's ``budget``."""

    def __init__(self, budget: WalkBudget, visit: Callable[[Blob, int], Iterator[InputFile]]) -> None:
        self.budget = budget
        self.visit = visit  # the walker's: a member may be a file, or an archive in its turn

    def walk_tar(self, archive: str, open_source: Callable[[], Readable], level: int) -> Iterator[InputFile]:
        with contextlib.ExitStack() as stack:
            try:
                source = stack.enter_context(contextlib.closing(open_source()))
                tar = stack.enter_context(
                    tarfile.open(fileobj=cast(BinaryIO, source), mode="r|", tarinfo=BoundedTarInfo)
                )
            except Corrupt as err:
                self.budget.record_corrupt(err)
                return
            except CORRUPT_ERRORS as err:
                self.budget.record_corrupt(Corrupt(archive, describe(err)))
                return
            while archive not in self.budget.broken:
                try:
                    member = tar.next()
                except Corrupt as err:
                    self.budget.record_corrupt(err)
                    return
                except CORRUPT_ERRORS as err:
                    self.budget.record_corrupt(Corrupt(archive, describe(err)))
                    return
                if member is None:
                    # Stream mode takes a clean EOF at a header boundary for the end, but a complete tar
                    # ends with a zero block: without one the archive was cut short.
                    assert tar.fileobj is not None
                    if tar.fileobj.tell() < tar.offset + tarfile.BLOCKSIZE:
                        self.budget.record_corrupt(Corrupt(archive, "truncated: no end-of-archive marker"))
                    return
                tar.members.clear()  # stream mode would otherwise keep every TarInfo in memory
                yield from self._tar_member(tar, member, archive, level)

    def _tar_member(
        self, tar: tarfile.TarFile, member: tarfile.TarInfo, archive: str, level: int
    ) -> Iterator[InputFile]:
        if member.isdir():
            return
        name, problem = member_name(member.name)
        path = f"{archive}/{name}"
        if problem:
            self.budget.skip(path, problem)
        elif is_junk(name, is_folder=False):
            self.budget.skip(path, "macOS metadata")
        elif member.issym():
            self.budget.skip(path, "symlink")
        elif member.islnk():
            self.budget.skip(path, "hardlink")
        elif member.ischr() or member.isblk() or member.isfifo():
            self.budget.skip(path, "device or fifo")
        elif not member.isreg():
            self.budget.skip(path, "unsupported archive member type")
        elif member.sparse is not None:
            self.budget.skip(path, "unsupported archive member type (sparse file)")
        else:
            reader = TarMemberReader(tar, member, archive)
            with contextlib.closing(ReplayStream(lambda: reader)) as replay:
                yield from self.visit(Blob(path, member.size, replay.open_view, charged=True), level)

    def walk_zip(self, blob: Blob, level: int) -> Iterator[InputFile]:
        with contextlib.ExitStack() as stack:
            try:
                archive = self._seekable_copy(blob, stack)
                archive_size = archive.seek(0, os.SEEK_END)
                self._check_zip_directory(blob.path, archive)
                zip_file = stack.enter_context(zipfile.ZipFile(archive))
            except Corrupt as err:
                self.budget.record_corrupt(err)
                return
            except CORRUPT_ERRORS as err:
                self.budget.record_corrupt(Corrupt(blob.path, describe(err)))
                return
            members = zip_file.infolist()
            declared = sum(member.file_size for member in members)
            if declared > BOMB_FLOOR and declared > self.budget.limits.max_ratio * max(archive_size, 1):
                raise InputLimitExceeded(
                    f"archive {display_path(blob.path)} looks like a decompression bomb: it declares {fmt_bytes(declared)} "
                    f"from {fmt_bytes(archive_size)} (ratio above {self.budget.limits.max_ratio}, max_ratio)"
                )
            for member in members:
                yield from self._zip_member(zip_file, member, blob.path, level)

    def _zip_member(
        self, zip_file: zipfile.ZipFile, member: zipfile.ZipInfo, archive: str, level: int
    ) -> Iterator[InputFile]:
        mode = member.external_attr >> 16 if member.create_system == 3 else 0  # unix mode bits
        if member.is_dir() or stat.S_ISDIR(mode):
            return
        name, problem = member_name(member.filename)
        path = f"{archive}/{name}"
        if problem:
            self.budget.skip(path, problem)
        elif is_junk(name, is_folder=False):
            self.budget.skip(path, "macOS metadata")
        elif stat.S_ISLNK(mode):
            self.budget.skip(path, "symlink")
        elif stat.S_IFMT(mode) and not stat.S_ISREG(mode):
            self.budget.skip(path, "unsupported archive member type")
        elif member.flag_bits & 0x1:
            self.budget.skip(path, "encrypted zip member")
        elif member.compress_type not in ZIP_METHODS:
            self.budget.skip(path, f"unsupported zip compression method {member.compress_type}")
        else:
            opener = partial(self._open_zip_member, zip_file, member, path, HighWater())
            yield from self.visit(Blob(path, member.file_size, opener, charged=True), level)

    def _open_zip_member(
        self, zip_file: zipfile.ZipFile, member: zipfile.ZipInfo, path: str, high_water: HighWater
    ) -> Readable:
        try:
            stream = zip_file.open(member)
        except CORRUPT_ERRORS as err:
            raise Corrupt(path, describe(err)) from err
        # ZipExtFile never reads past compress_size, so that is an honest denominator for the ratio.
        return MeteredReader(stream, self.budget, path, high_water, compressed=lambda: member.compress_size)

    def _seekable_copy(self, blob: Blob, stack: contextlib.ExitStack) -> BinaryIO:
        if blob.seekable is not None:
            return cast(BinaryIO, stack.enter_context(contextlib.closing(blob.seekable())))
        spool = stack.enter_context(tempfile.SpooledTemporaryFile(max_size=SPOOL_MEMORY))  # noqa: SIM115
        with contextlib.closing(blob.open()) as source:
            copied = 0
            while chunk := source.read(CHUNK):
                copied += len(chunk)
                if copied > self.budget.limits.max_total_bytes:
                    raise InputLimitExceeded(
                        f"archive {display_path(blob.path)} is larger than the "
                        f"{fmt_bytes(self.budget.limits.max_total_bytes)} limit (max_total_bytes)"
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
        if entries > self.budget.limits.max_files:
            raise InputLimitExceeded(
                f"archive {display_path(path)} holds {entries} entries, more than the {self.budget.limits.max_files} "
                f"file limit (max_files)"
            )
        if directory_size > max(self.budget.limits.max_files, 1) * CENTRAL_DIRECTORY_BYTES_PER_FILE:
            raise InputLimitExceeded(
                f"archive {display_path(path)} has a {fmt_bytes(directory_size)} central directory, too big for "
                f"{self.budget.limits.max_files} files (max_files)"
            )


class BoundedTarInfo(tarfile.TarInfo):
    """Refuses absurd long-name and pax headers before tarfile reads them whole into memory."""

    def _proc_member(self, tar: tarfile.TarFile) -> tarfile.TarInfo:  # type: ignore[override]
        if self.type in _TAR_HEADER_DATA_TYPES and self.size > TAR_HEADER_DATA_BYTES:
            raise tarfile.ReadError(
                f"{fmt_bytes(self.size)} extended header (limit {fmt_bytes(TAR_HEADER_DATA_BYTES)})"
            )
        return super()._proc_member(tar)  # type: ignore[misc]


_TAR_HEADER_DATA_TYPES = {
    tarfile.GNUTYPE_LONGNAME,
    tarfile.GNUTYPE_LONGLINK,
    tarfile.XHDTYPE,
    tarfile.XGLTYPE,
    tarfile.SOLARIS_XHDTYPE,
}


class TarMemberReader(Reader):
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
            raise StaleStream("the tar stream has moved past this member")
        try:
            data = self._stream.read(min(size, self._left))
        except PASS_THROUGH:
            raise
        except CORRUPT_ERRORS as err:
            raise Corrupt(self._archive, describe(err)) from err
        if not data:
            raise Corrupt(self._archive, "truncated: unexpected end of data")
        self._left -= len(data)
        self._expected += len(data)
        return data
